import Foundation

/// The one owner of work behind answers (revalidations, placeholders,
/// warm-ups, folds, reclaims, cleanups): nothing in the library runs
/// behind an answer but through here.
///
/// - **Deduplicated:** a job whose ``BackgroundJobKey`` is waiting or
///   running is not queued again.
/// - **Bounded:** at most `max_queued` jobs wait per kind and waiting jobs
///   hold at most `max_bytes`; past a bound the oldest job of the lowest
///   priority is dropped and counted (``BackgroundCounts/dropped``). Nothing
///   waits unboundedly: a submit never suspends.
/// - **Fair:** kinds take turns (round robin over the kinds with a job
///   waiting); within a kind the highest priority starts first, then the
///   oldest. A flood of one kind (manifest warm-ups) cannot starve another
///   (the reclaimer, revalidations, placeholders): the mixed soak showed it
///   did when the highest priority of any kind went first. At most
///   `concurrency` run at once, each in a task this scheduler owns.
///   A job's own downloads and renders run with a ``PriorityHandle`` marked
///   `background`, which the download and render pools give a reserved
///   share of their hand-offs (foreground traffic cannot take it to zero).
/// - **Stopped:** ``close()`` drops what waits, cancels what runs and
///   returns once every job has ended (jobs honour cancellation).
///
/// `@unchecked Sendable` is sound: `state` is read and written only while
/// `lock` (a pthread mutex, `NSLock`, which ThreadSanitizer sees) is held;
/// job bodies and observers are `@Sendable`; tasks are started under the
/// lock, and a task's own end takes the same lock, so it is recorded before
/// it can be removed.
package final class BackgroundScheduler: @unchecked Sendable {
    package typealias Body = @Sendable () async -> Void

    private struct Job {
        let key: BackgroundJobKey
        let priority: ImagePriority
        let bytes: Int64
        let body: Body
        /// Called (outside the lock) when the job will not run: dropped past a bound, cancelled, closed.
        let onDrop: (@Sendable () -> Void)?
    }

    private struct State {
        var waiting: [Int: Job] = [:]
        /// Per kind, per priority level (raw value): waiting ids in arrival
        /// order; ids of jobs gone (dropped, started) are skipped.
        var queues: [[ArrivalQueue]] = []
        /// The kinds, in the order they were declared (``register(_:)``): their position indexes the tables.
        var kinds: [BackgroundKind] = []
        var kindIndex: [BackgroundKind: Int] = [:]
        var keys: [BackgroundJobKey: Int] = [:]
        var running: [Int: (key: BackgroundJobKey, task: Task<Void, Never>)] = [:]
        /// Jobs asked for again while their key ran (``submit(_:priority:bytes:again:onDrop:_:)``
        /// with `again`): queued when it ends.
        var again: [BackgroundJobKey: Job] = [:]
        var counts: [BackgroundCounts] = []
        var bytes: Int64 = 0
        var nextID = 0
        /// The kind (index) of the job started last: the next turn goes to the kinds after it.
        var lastKind = -1
        /// Foreground requests downloading or rendering now (``foregroundBegan()``).
        var foreground = 0
        /// When `foreground` last fell to zero (the quiet kinds start `quietAfter` later).
        var quietSince = ContinuousClock.now
        /// The one timer that starts the quiet kinds once the quiet has lasted
        /// (``startWhenQuiet(at:)``); nil when none is armed.
        var quietTimer: Task<Void, Never>?
        var closed = false
    }

    package let settings: BackgroundSettings
    private let lock = NSLock()
    private var state = State()
    private var observers: [@Sendable (BackgroundKind, Int64) -> Void] = []
    /// Jobs waiting and running, in all and per kind (index), mirrored
    /// after every change (tests, one-shot commands and close wait on it).
    private let load = Watched(Load())

    private struct Load: Sendable {
        var queued = 0
        var running = 0
        var active: [Int] = []
        var finished: [Int] = []
    }

    /// `kinds`: those its clients will submit, declared up front so that
    /// ``counts`` (`/metrics`) list each at 0; others are declared when first submitted.
    package init(settings: BackgroundSettings = BackgroundSettings(), kinds: [BackgroundKind] = []) {
        self.settings = settings
        // Quiet since long enough: a scheduler that never saw a request starts everything at once.
        state.quietSince = ContinuousClock.now - settings.quietAfter
        for kind in kinds { register(kind) }
    }

    /// Declares `kind` (again: a no-op; with other limits: a programming
    /// error) and returns its position in the tables.
    @discardableResult
    package func register(_ kind: BackgroundKind) -> Int {
        locked { index(of: kind) }
    }

    /// The kinds declared so far, in the order they were declared.
    package var kinds: [BackgroundKind] { locked { state.kinds } }

    /// `kind`'s position, declaring it if new. Under the lock.
    private func index(of kind: BackgroundKind) -> Int {
        if let index = state.kindIndex[kind] {
            let declared = state.kinds[index]
            precondition(declared.maxRunning == kind.maxRunning && declared.waitsForQuiet == kind.waitsForQuiet,
                         "background kind \(kind.name) declared twice with different limits")
            return index
        }
        state.kindIndex[kind] = state.kinds.count
        state.kinds.append(kind)
        state.queues.append([ArrivalQueue](repeating: ArrivalQueue(), count: ImagePriority.allCases.count))
        state.counts.append(BackgroundCounts())
        publish()
        return state.kinds.count - 1
    }

    /// Queues `body` under `key` unless that key waits or runs already.
    /// `bytes`: what the job holds while it waits (counted against `max_bytes`).
    /// `again`: when the key is running (not waiting), the job runs once
    /// more after it (a cleanup asked for while one runs sees what was
    /// added meanwhile); such a request is answered `.queued`.
    /// `onDrop`: called when the job, once queued, will not run after all
    /// (dropped past a bound, cancelled while waiting, closed); not called
    /// when the submit itself returns anything but `.queued`.
    @discardableResult
    package func submit(_ key: BackgroundJobKey, priority: ImagePriority = .veryLow, bytes: Int = 0, again: Bool = false,
                        onDrop: (@Sendable () -> Void)? = nil, _ body: @escaping Body) -> BackgroundSubmission {
        let job = Job(key: key, priority: priority, bytes: Int64(bytes), body: body, onDrop: onDrop)
        var dropped: [Job] = []
        let outcome = locked { () -> BackgroundSubmission in
            if state.closed { return .closed }
            if let id = state.keys[key] {
                guard again, state.running[id] != nil else { return .duplicate }
                state.again[key] = job
                return .queued
            }
            let droppedSelf = enqueue(job, dropped: &dropped)
            startWhileRoom()
            return droppedSelf ? .dropped : .queued
        }
        for job in dropped { job.onDrop?() }
        return outcome
    }

    /// A foreground request (an answer someone waits for, not a job of
    /// this scheduler) starts downloading or rendering: kinds that wait for
    /// quiet (``BackgroundKind/waitsForQuiet``: format upgrades) start no
    /// job until every such request has ended (``foregroundEnded()``) and
    /// none has begun for `quietAfter`. A job of such a kind already
    /// running is not stopped.
    package func foregroundBegan() {
        locked { state.foreground += 1 }
    }

    /// The end of a request counted by ``foregroundBegan()``; `quietAfter`
    /// after the last one, waiting jobs of the quiet kinds may start.
    package func foregroundEnded() {
        locked {
            state.foreground = max(0, state.foreground - 1)
            if state.foreground == 0 {
                state.quietSince = ContinuousClock.now
                if state.counts.indices.contains(where: { k in
                    state.kinds[k].waitsForQuiet && state.counts[k].queued > 0
                }) {
                    startWhileRoom()
                }
            }
        }
    }

    /// Foreground requests downloading or rendering now.
    package var foregroundCount: Int { locked { state.foreground } }

    /// Whether a job with `key` waits or runs.
    package func contains(_ key: BackgroundJobKey) -> Bool { locked { state.keys[key] != nil } }

    /// Counts by kind (`/metrics`: `artcache_background_jobs{kind,state}`, `artcache_background_dropped_total{kind}`).
    package var counts: [BackgroundKind: BackgroundCounts] {
        locked {
            Dictionary(uniqueKeysWithValues: zip(state.kinds, state.counts).map { ($0, $1) })
        }
    }

    /// Bytes held by waiting jobs.
    package var queuedBytes: Int64 { locked { state.bytes } }

    /// Adds an observer of every job's duration (kind, nanoseconds), called
    /// on the job's task when it ends, outside the lock.
    package func observe(_ observer: @escaping @Sendable (BackgroundKind, Int64) -> Void) {
        locked { observers.append(observer) }
    }

    /// Returns once nothing waits or runs (tests, one-shot commands).
    package func waitUntilIdle() async {
        await load.wait { $0.queued == 0 && $0.running == 0 }
    }

    /// Returns once no job of `kind` waits or runs (jobs of it submitted meanwhile are waited for too).
    package func waitUntilIdle(_ kind: BackgroundKind) async {
        let index = register(kind)
        await load.wait { $0.active[index] == 0 }
    }

    /// Returns once `count` jobs of `kind` have finished since the
    /// scheduler opened (tests: work handed over behind an answer, no polling).
    package func waitUntilFinished(_ kind: BackgroundKind, count: Int) async {
        let index = register(kind)
        await load.wait { $0.finished[index] >= count }
    }

    /// Returns once the jobs waiting and running satisfy `predicate` (tests, no polling).
    package func waitForLoad(until predicate: @escaping @Sendable ((queued: Int, running: Int)) -> Bool) async {
        await load.wait { predicate(($0.queued, $0.running)) }
    }

    /// No job starts any more: those waiting are dropped (not counted as
    /// dropped: they were not refused by a bound), those running are
    /// cancelled; returns once they have ended. Idempotent.
    package func close() async {
        let (running, dropped) = locked { () -> ([Task<Void, Never>], [Job]) in
            state.closed = true
            state.quietTimer?.cancel()
            for (_, job) in state.waiting {
                state.counts[index(of: job.key.kind)].queued -= 1
                state.keys[job.key] = nil
            }
            let dropped = Array(state.waiting.values) + Array(state.again.values)
            state.waiting = [:]
            state.again = [:]
            state.bytes = 0
            for kind in state.queues.indices {
                for level in state.queues[kind].indices { state.queues[kind][level] = ArrivalQueue() }
            }
            publish()
            return (state.running.values.map(\.task), dropped)
        }
        for job in dropped { job.onDrop?() }
        for task in running { task.cancel() }
        await load.wait { $0.running == 0 }
    }

    // MARK: Inside the lock

    /// Queues `job`, then applies the bounds (the jobs they drop are added
    /// to `dropped`); returns whether `job` itself was dropped.
    private func enqueue(_ job: Job, dropped: inout [Job]) -> Bool {
        let key = job.key
        state.nextID += 1
        let id = state.nextID
        state.waiting[id] = job
        let k = index(of: key.kind)
        state.queues[k][job.priority.rawValue].append(id)
        state.keys[key] = id
        state.counts[k].queued += 1
        state.bytes += job.bytes
        var droppedSelf = false
        while state.counts[k].queued > settings.maxQueued, let victim = dropOldestLowest(kind: key.kind) {
            if victim.id == id { droppedSelf = true } else { dropped.append(victim.job) }
        }
        while state.bytes > settings.maxBytes, let victim = dropOldestLowest(kind: nil) {
            if victim.id == id { droppedSelf = true } else { dropped.append(victim.job) }
        }
        return droppedSelf
    }

    /// Drops the oldest waiting job of the lowest priority (of `kind`, or
    /// of any kind); returns its id, nil when nothing waits.
    private func dropOldestLowest(kind: BackgroundKind?) -> (id: Int, job: Job)? {
        var victim: Int?
        for level in ImagePriority.allCases.map(\.rawValue) {
            for k in kind.map({ [index(of: $0)] }) ?? Array(state.queues.indices) {
                guard let id = state.queues[k][level].first(in: state.waiting) else { continue }
                if victim.map({ id < $0 }) ?? true { victim = id }
            }
            if victim != nil { break }
        }
        guard let id = victim, let job = state.waiting.removeValue(forKey: id) else { return nil }
        state.keys[job.key] = nil
        state.bytes -= job.bytes
        let k = index(of: job.key.kind)
        state.counts[k].queued -= 1
        state.counts[k].dropped += 1
        return (id, job)
    }

    /// The next job to start: from the first kind after the last one
    /// started that has a job waiting (kinds take turns), its highest
    /// priority, then its oldest.
    private func takeNext() -> (id: Int, job: Job)? {
        let kinds = state.queues.count
        let quietFrom = state.quietSince + settings.quietAfter
        let quiet = state.foreground == 0 && ContinuousClock.now >= quietFrom
        for offset in 1...kinds {
            let k = (state.lastKind + offset) % kinds
            let kind = state.kinds[k]
            if let cap = kind.maxRunning, state.counts[k].running >= cap { continue }
            if kind.waitsForQuiet, !quiet {
                // Not quiet long enough yet: the timer comes back then (a
                // request beginning meanwhile moves the time on at its end).
                if state.foreground == 0, state.counts[k].queued > 0 { startWhenQuiet(at: quietFrom) }
                continue
            }
            for level in ImagePriority.allCases.map(\.rawValue).reversed() {
                guard let id = state.queues[k][level].popFirst(in: state.waiting),
                      let job = state.waiting.removeValue(forKey: id) else { continue }
                state.lastKind = k
                return (id, job)
            }
        }
        return nil
    }

    /// Arms the one quiet timer (unless one is armed): at `instant` it
    /// starts what may start then. Owned here, cancelled by ``close()``.
    private func startWhenQuiet(at instant: ContinuousClock.Instant) {
        guard state.quietTimer == nil, !state.closed else { return }
        state.quietTimer = Task(priority: .background) { [self] in
            try? await Task.sleep(until: instant, clock: .continuous)
            locked {
                state.quietTimer = nil
                startWhileRoom()
            }
        }
    }

    private func startWhileRoom() {
        defer { publish() }
        while !state.closed, state.running.count < settings.concurrency, let (id, job) = takeNext() {
            state.bytes -= job.bytes
            let k = index(of: job.key.kind)
            state.counts[k].queued -= 1
            state.counts[k].running += 1
            let task = Task(priority: .background) { [self] in
                let start = ContinuousClock.now
                await job.body()
                finished(id, kind: job.key.kind, nanoseconds: StageTimings.nanoseconds(ContinuousClock.now - start))
            }
            state.running[id] = (job.key, task)
        }
    }

    /// Cancels the waiting and running jobs whose key `matches` (a store
    /// closing takes its own jobs out of a shared scheduler); returns once
    /// the running ones have ended.
    package func cancel(where matches: @escaping @Sendable (BackgroundJobKey) -> Bool) async {
        let (running, dropped) = locked { () -> ([Task<Void, Never>], [Job]) in
            var dropped: [Job] = []
            for (id, job) in state.waiting where matches(job.key) {
                state.waiting[id] = nil
                state.keys[job.key] = nil
                state.bytes -= job.bytes
                state.counts[index(of: job.key.kind)].queued -= 1
                dropped.append(job)
            }
            for (key, job) in state.again where matches(key) {
                state.again[key] = nil
                dropped.append(job)
            }
            publish()
            return (state.running.values.filter { matches($0.key) }.map(\.task), dropped)
        }
        for job in dropped { job.onDrop?() }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }

    private func finished(_ id: Int, kind: BackgroundKind, nanoseconds: Int64) {
        var dropped: [Job] = []
        let observers = locked { () -> [@Sendable (BackgroundKind, Int64) -> Void] in
            if let ended = state.running.removeValue(forKey: id) {
                state.keys[ended.key] = nil
                let k = index(of: kind)
                state.counts[k].running -= 1
                state.counts[k].finished += 1
                if let again = state.again.removeValue(forKey: ended.key) {
                    if state.closed { dropped.append(again) } else if enqueue(again, dropped: &dropped) { dropped.append(again) }
                }
            }
            startWhileRoom()
            return self.observers
        }
        for job in dropped { job.onDrop?() }
        for observer in observers { observer(kind, nanoseconds) }
    }

    private func publish() {
        let now = Load(queued: state.waiting.count, running: state.running.count,
                       active: state.counts.map { $0.queued + $0.running }, finished: state.counts.map(\.finished))
        load.withLock { $0 = now }
    }

    private func locked<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
