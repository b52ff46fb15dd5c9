import ArtCacheCore
import Foundation

/// Bounded in-flight work with a bounded queue in front of it
/// (`[service] max_inflight`, `queue`), ordered and shed by class (the
/// request's priority: `pri=high|normal|low` of a signed path).
///
/// - A free slot goes to whoever asks; when none is free the request takes
///   a place in the queue. Places are kept in class order (higher first,
///   first come first served within a class), and a freed slot goes to the
///   first place: a request never waits behind a lower one.
/// - When the queue is full, an arrival of a higher class takes the place
///   of the newest queued request of the lowest class below its own, which
///   is refused (`overloaded`, 429): a high arrival sheds low, then normal;
///   a normal one sheds low. An arrival that finds nothing lower queued is
///   refused at once — so a low request arriving at a full queue always is.
///
/// Hence a low request is refused before any higher one waits: a higher
/// request is never refused while a lower one holds a place, and every
/// queued lower request stands behind it. Beyond slots and queue a request
/// is refused at once instead of piling up memory.
///
/// `@unchecked Sendable` is sound: `state` is read and written only inside
/// `lock.withLock` (a pthread mutex, which ThreadSanitizer sees), and
/// continuations are resumed after the lock is released.
final class Admission: @unchecked Sendable {
    enum Refusal: Error {
        /// In flight and queue both full (on arrival), or shed from the queue
        /// for a higher class.
        case overloaded
        /// The waiting request was cancelled (client gone, deadline).
        case cancelled
    }

    /// How a place in the queue ends.
    private enum Verdict { case granted, shed, cancelled }

    /// A place in the queue; `continuation` is nil until its request waits.
    private struct Place {
        let id: Int
        let priority: ImagePriority
        var continuation: CheckedContinuation<Verdict, Never>?
    }

    private struct State {
        var inflight = 0
        /// In class order, higher first, FIFO within a class. Non-empty only
        /// while every slot is taken (a freed slot goes to the first place).
        var queue: [Place] = []
        /// Verdicts reached for places whose request had not waited yet
        /// (between the decision and the continuation): the wait takes them.
        var verdicts: [Int: Verdict] = [:]
        var nextID = 0
        /// Callers of ``Admission/waitUntilQueued(_:)`` and ``Admission/waitUntilQueued(atMost:)``:
        /// resumed once the queue holds at least (at most) `depth` places.
        var depthWaiters: [(depth: Int, atMost: Bool, continuation: CheckedContinuation<Void, Never>)] = []

        func satisfies(depth: Int, atMost: Bool) -> Bool { atMost ? queue.count <= depth : queue.count >= depth }

        /// Puts `place` after every place of its class or a higher one.
        mutating func insert(_ place: Place) {
            let index = queue.firstIndex { $0.priority < place.priority } ?? queue.endIndex
            queue.insert(place, at: index)
        }

        /// Removes the newest place of the lowest class below `priority`
        /// (nil when none is lower).
        mutating func shed(below priority: ImagePriority) -> Place? {
            guard let last = queue.last, last.priority < priority else { return nil }
            return queue.removeLast()  // the queue's end: the lowest class, newest within it
        }
    }

    let maxInflight: Int
    let maxQueue: Int
    private let lock = NSLock()
    private var state = State()
    /// Called when a request starts waiting in the queue (tests, metrics).
    private let onQueued: @Sendable () -> Void
    /// Called with the class of every request refused as overloaded: on
    /// arrival or shed from the queue (metrics).
    private let onShed: @Sendable (ImagePriority) -> Void
    /// Where tests step into an admission; no-ops in production. (Its
    /// other seams, ``waitUntilQueued(_:)`` and ``waitUntilQueued(atMost:)``,
    /// are events to wait on, under "Test seams" below.)
    package struct TestSeams: Sendable {
        /// Runs between a request's place being decided and its waiting
        /// (tests let a burst interleave there).
        var afterDecision: @Sendable () async -> Void = {}
    }

    private let seams: TestSeams

    init(maxInflight: Int, queue: Int, onQueued: @escaping @Sendable () -> Void = {},
         onShed: @escaping @Sendable (ImagePriority) -> Void = { _ in }, seams: TestSeams = TestSeams()) {
        self.maxInflight = max(1, maxInflight)
        self.maxQueue = max(0, queue)
        self.onQueued = onQueued
        self.onShed = onShed
        self.seams = seams
    }

    /// (in flight, places in the queue) now.
    var load: (inflight: Int, waiting: Int) { lock.withLock { (state.inflight, state.queue.count) } }

    /// Runs `body` holding a slot; waits in the queue when all are taken.
    func run<T: Sendable>(priority: ImagePriority = .normal, _ body: () async throws -> T) async throws -> T {
        try await acquire(priority: priority)
        defer { release() }
        return try await body()
    }

    /// A slot now, a place in the queue (perhaps another's, shed), or a refusal.
    private enum Entry { case granted, queued(Int, shed: Place?), full }

    func acquire(priority: ImagePriority = .normal) async throws(Refusal) {
        let entry: Entry = lock.withLock {
            if state.inflight < maxInflight {
                state.inflight += 1
                return .granted
            }
            // The place is taken here, in the same critical section as the
            // check: a burst cannot overshoot the bound between the two.
            var shed: Place?
            if state.queue.count >= maxQueue {
                shed = state.shed(below: priority)
                guard let victim = shed else { return .full }
                if victim.continuation == nil { state.verdicts[victim.id] = .shed }
            }
            state.nextID += 1
            state.insert(Place(id: state.nextID, priority: priority))
            return .queued(state.nextID, shed: shed)
        }
        let id: Int
        switch entry {
        case .granted: return
        case .full:
            onShed(priority)
            throw .overloaded
        case .queued(let queued, let shed):
            if let shed {
                shed.continuation?.resume(returning: .shed)
                onShed(shed.priority)
            }
            id = queued
            wakeDepthWaiters()
        }
        await seams.afterDecision()
        let verdict = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Verdict, Never>) in
                let now: Verdict? = lock.withLock {
                    if let verdict = state.verdicts.removeValue(forKey: id) { return verdict }
                    guard let index = state.queue.firstIndex(where: { $0.id == id }) else { return .cancelled }  // unreachable
                    state.queue[index].continuation = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) } else { onQueued() }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Verdict, Never>? = lock.withLock {
                // Already granted or shed: that verdict stands.
                guard let index = state.queue.firstIndex(where: { $0.id == id }) else { return nil }
                let place = state.queue.remove(at: index)
                if place.continuation == nil { state.verdicts[id] = .cancelled }  // not waiting yet: the wait above sees it
                return place.continuation
            }
            waiter?.resume(returning: .cancelled)
            wakeDepthWaiters()
        }
        switch verdict {
        case .granted: return
        case .shed: throw .overloaded
        case .cancelled: throw .cancelled
        }
    }

    // MARK: Test seams

    /// Returns once at least `depth` requests hold places in the queue: an
    /// event to wait on (tests), not a count to poll.
    func waitUntilQueued(_ depth: Int) async {
        await waitForQueue(depth: depth, atMost: false)
    }

    /// Returns once at most `depth` requests hold places in the queue (tests:
    /// a queued request whose client left is gone from it).
    func waitUntilQueued(atMost depth: Int) async {
        await waitForQueue(depth: depth, atMost: true)
    }

    private func waitForQueue(depth: Int, atMost: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now: Bool = lock.withLock {
                if state.satisfies(depth: depth, atMost: atMost) { return true }
                state.depthWaiters.append((depth, atMost, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Resumes the ``waitUntilQueued(_:)`` callers the queue's length now satisfies.
    private func wakeDepthWaiters() {
        let ready: [CheckedContinuation<Void, Never>] = lock.withLock {
            guard !state.depthWaiters.isEmpty else { return [] }
            let count = state.queue.count
            let met = { (waiter: (depth: Int, atMost: Bool, continuation: CheckedContinuation<Void, Never>)) in
                waiter.atMost ? count <= waiter.depth : count >= waiter.depth
            }
            let ready = state.depthWaiters.filter(met).map(\.continuation)
            state.depthWaiters.removeAll(where: met)
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Hands the slot to the first place in the queue (the highest class,
    /// oldest within it), or frees it.
    func release() {
        let next: CheckedContinuation<Verdict, Never>? = lock.withLock {
            guard !state.queue.isEmpty else {
                state.inflight -= 1
                return nil
            }
            let place = state.queue.removeFirst()
            if place.continuation == nil { state.verdicts[place.id] = .granted }  // it takes the slot when it comes to wait
            return place.continuation
        }
        next?.resume(returning: .granted)
        wakeDepthWaiters()
    }
}
