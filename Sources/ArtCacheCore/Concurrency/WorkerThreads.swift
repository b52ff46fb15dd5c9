import Foundation

/// The render pool: a fixed set of long-lived threads taking blocking jobs
/// by priority (highest first, then first come).
///
/// A free thread takes the next job itself, so back-to-back renders need no
/// hop through Swift's cooperative pool and no wake-up: a burst is handed
/// over as a batch (a job queued while every thread is busy wakes nobody;
/// one queued while threads sleep wakes one of them, never more threads than
/// there are jobs waiting), and each render runs on a thread
/// that rendered before (libvips' per-thread buffers and the allocator's
/// arenas stay warm), as a plain C loop over libvips would. A queued job whose
/// task is cancelled leaves the queue at once; its priority may change while
/// it waits.
///
/// Background work (a job whose ``PriorityHandle`` is marked `background`)
/// has a reserved share (``BackgroundShare``): while such a job waits, at
/// most ``BackgroundShare/foregroundInARow`` foreground jobs in a row are
/// handed over before it, whatever their priority, so a steady stream of
/// requests cannot starve the work behind answers (placeholders, warm-ups).
///
/// `@unchecked Sendable` is sound: every stored var (`jobs`, `queues`,
/// `cancelled`, `nextID`, `stopped`, `running`, `sleeping`, `waking`,
/// `handoffs`, `background`, `share`) is read and written only while
/// `condition` is locked; the jobs are `@Sendable` closures.
package final class WorkerThreads: @unchecked Sendable {
    private struct Job {
        var priority: ImagePriority
        let background: Bool
        let run: @Sendable () -> Void
        let cancel: @Sendable () -> Void
    }

    private let condition = NSCondition()
    private var jobs: [Int: Job] = [:]
    /// Job ids in arrival order, one queue per priority (index = raw value).
    /// Stale ids (cancelled, or moved by a priority change) are skipped.
    private var queues = [ArrivalQueue](repeating: ArrivalQueue(), count: ImagePriority.allCases.count)
    private var cancelled: Set<Int> = []
    private var nextID = 0
    private var stopped = false
    private var running = 0
    /// Threads waiting on `condition`, and how many of them were signalled
    /// and have not woken yet (so a burst wakes at most one thread per job).
    private var sleeping = 0
    private var waking = 0
    private var handoffs = (jobs: 0, wakeups: 0)
    /// Ids of background jobs in arrival order (stale ids skipped), and
    /// their share of the hand-offs.
    private var background = ArrivalQueue()
    private var share = BackgroundShare()
    /// `load`, mirrored after every change (under `condition`) so it can be awaited.
    private let watchedLoad = Watched((waiting: 0, running: 0))

    /// `niceness`: added to each thread's nice value (0: as the process).
    package init(count: Int, name: String, niceness: Int32 = 0) {
        for index in 0..<max(1, count) {
            let thread = Thread { [self] in
                ThreadPriority.lowerThisThread(by: niceness)
                ThreadName.set("\(name)-\(index)")  // Linux keeps 15 bytes: "artcache.render"
                loop()
            }
            thread.name = "\(name)-\(index)"
            thread.stackSize = 8 << 20  // libvips and its loaders recurse deeply
            thread.start()
        }
    }

    /// Jobs waiting for a thread, and jobs running.
    package var load: (waiting: Int, running: Int) { locked { (jobs.count, running) } }

    /// Jobs taken by the threads, and how many times a sleeping thread woke
    /// to take one: jobs per wake-up is the size of the batches handed over.
    package var handoffCounts: (jobs: Int, wakeups: Int) { locked { handoffs } }

    /// Returns once the jobs waiting and running satisfy `predicate` (tests, no polling).
    package func waitForLoad(until predicate: @escaping @Sendable ((waiting: Int, running: Int)) -> Bool) async {
        await watchedLoad.wait(until: predicate)
    }

    /// Publishes the counts (call with `condition` locked, after a change).
    private func loadChanged() {
        let now = (waiting: jobs.count, running: running)
        watchedLoad.withLock { $0 = now }
    }

    /// Runs `body` on one of the threads once it is the best job waiting.
    /// Throws `CancellationError` (without running it) when the calling task
    /// is cancelled while it waits.
    package func run<T: Sendable>(priority: PriorityHandle, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let id = locked { nextID += 1; return nextID }
        defer { locked { _ = cancelled.remove(id) } }
        // The observer may run while a coalescer holds its lock (lock order:
        // coalescer → handle → this queue's condition); it takes only the
        // condition, and nothing under the condition calls back out.
        return try await priority.whileObserving({ [self] newValue in
            locked {
                guard jobs[id] != nil, jobs[id]?.priority != newValue else { return }
                jobs[id]?.priority = newValue
                queues[newValue.rawValue].append(id)
            }
        }) {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
                    let queued = locked { () -> Bool in
                        if cancelled.remove(id) != nil { return false }
                        let value = priority.value
                        let once = RunOnce(body)
                        jobs[id] = Job(priority: value, background: priority.background,
                                       run: { continuation.resume(with: once.run()) },
                                       cancel: { continuation.resume(throwing: CancellationError()) })
                        queues[value.rawValue].append(id)
                        if priority.background { background.append(id) }
                        if sleeping > waking {
                            waking += 1
                            condition.signal()
                        }
                        loadChanged()
                        return true
                    }
                    if !queued { continuation.resume(throwing: CancellationError()) }
                }
            } onCancel: {
                let job = locked { () -> Job? in
                    if let job = jobs.removeValue(forKey: id) {
                        loadChanged()
                        return job
                    }
                    cancelled.insert(id)  // not queued yet, or already running (then it finishes)
                    return nil
                }
                job?.cancel()
            }
        }
    }

    /// Lets the threads finish the queued jobs and exit.
    package func stop() {
        locked {
            stopped = true
            condition.broadcast()
        }
    }

    private func loop() {
        while true {
            condition.lock()
            var slept = false
            while jobs.isEmpty && !stopped {
                sleeping += 1
                condition.wait()
                sleeping -= 1
                waking = max(0, waking - 1)  // a spurious wake-up only undercounts: one signal too many later
                slept = true
            }
            guard let job = takeBest() else {
                condition.unlock()
                return
            }
            handoffs.jobs += 1
            if slept { handoffs.wakeups += 1 }
            running += 1
            loadChanged()
            condition.unlock()
            job.run()
            locked {
                running -= 1
                loadChanged()
            }
        }
    }

    /// The job to hand over next (call with the lock held): the oldest
    /// background job when its reserved turn has come, else the
    /// highest-priority job that came first.
    private func takeBest() -> Job? {
        // The oldest background job still waiting (taken or cancelled ones skipped).
        let backgroundWaiting = background.first { jobs[$0] != nil }
        if share.isBackgroundsTurn(backgroundWaiting != nil), let id = backgroundWaiting, let job = jobs.removeValue(forKey: id) {
            share.handedOver(background: true, backgroundWaited: true)
            return job
        }
        guard let job = takeByPriority() else { return nil }
        share.handedOver(background: job.background, backgroundWaited: backgroundWaiting != nil)
        return job
    }

    /// The oldest job of the highest priority waiting (an id queued at a
    /// priority its job no longer has is skipped: it is queued at its new one too).
    private func takeByPriority() -> Job? {
        for level in queues.indices.reversed() {
            if let id = queues[level].popFirst(where: { jobs[$0]?.priority.rawValue == level }) {
                return jobs.removeValue(forKey: id)
            }
        }
        return nil
    }

    private func locked<R>(_ body: () throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }
}

/// A job's body, run once and released before its caller resumes: what the
/// body captured (a store, an image) is not kept alive by the worker thread
/// after the caller has its result (a store released right after its last
/// lookup is released then, not when the thread next loops).
///
/// `@unchecked Sendable` is sound: `body` is set at init, and read and
/// cleared once, by the one thread that took the job from the queue under
/// the pool's lock (which orders it after the init).
private final class RunOnce<T: Sendable>: @unchecked Sendable {
    private var body: (@Sendable () throws -> T)?

    init(_ body: @escaping @Sendable () throws -> T) { self.body = body }

    func run() -> Result<T, any Error> {
        guard let body else { return .failure(CancellationError()) }
        self.body = nil
        return Result { try body() }
    }
}
