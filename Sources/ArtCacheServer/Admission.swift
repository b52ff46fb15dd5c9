import Foundation

/// Bounded in-flight work with a bounded FIFO queue in front of it
/// (`[service] max_inflight`, `queue`): beyond both, a request is refused
/// at once (429) instead of piling up memory.
///
/// `@unchecked Sendable` is sound: `state` is read and written only inside
/// `lock.withLock` (a pthread mutex, which ThreadSanitizer sees), and
/// continuations are resumed after the lock is released.
final class Admission: @unchecked Sendable {
    enum Refusal: Error {
        /// In flight and queue both full.
        case overloaded
        /// The waiting request was cancelled (client gone, deadline).
        case cancelled
    }

    private struct State {
        var inflight = 0
        var waiters: [(id: Int, continuation: CheckedContinuation<Bool, Never>)] = []
        /// Places in the queue given out and not yet waited in (between the
        /// decision and the continuation): they count against the bound.
        var reserved = 0
        var cancelled: Set<Int> = []
        var nextID = 0
    }

    let maxInflight: Int
    let maxQueue: Int
    private let lock = NSLock()
    private var state = State()
    /// Called when a request starts waiting in the queue (tests, metrics).
    private let onQueued: @Sendable () -> Void
    /// Runs between a request's place being decided and its waiting (tests
    /// use it to let a burst interleave there; a no-op otherwise).
    private let afterDecision: @Sendable () async -> Void

    init(maxInflight: Int, queue: Int, onQueued: @escaping @Sendable () -> Void = {},
         afterDecision: @escaping @Sendable () async -> Void = {}) {
        self.maxInflight = max(1, maxInflight)
        self.maxQueue = max(0, queue)
        self.onQueued = onQueued
        self.afterDecision = afterDecision
    }

    /// (in flight, waiting) now.
    var load: (inflight: Int, waiting: Int) { lock.withLock { (state.inflight, state.waiters.count + state.reserved) } }

    /// Runs `body` holding a slot; waits in the queue when all are taken.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }

    /// A slot now, a place in the queue, or a refusal.
    private enum Entry { case granted, queued(Int), full }

    func acquire() async throws(Refusal) {
        let entry: Entry = lock.withLock {
            if state.inflight < maxInflight {
                state.inflight += 1
                return .granted
            }
            // The place is taken here, in the same critical section as the
            // check: a burst cannot overshoot the bound between the two.
            guard state.waiters.count + state.reserved < maxQueue else { return .full }
            state.reserved += 1
            state.nextID += 1
            return .queued(state.nextID)
        }
        switch entry {
        case .granted: return
        case .full: throw .overloaded
        case .queued(let id):
            await afterDecision()
            let granted = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                    let now: Bool? = lock.withLock {
                        state.reserved -= 1
                        if state.cancelled.remove(id) != nil { return false }
                        if state.inflight < maxInflight {
                            state.inflight += 1
                            return true
                        }
                        state.waiters.append((id, continuation))
                        return nil
                    }
                    if let now { continuation.resume(returning: now) } else { onQueued() }
                }
            } onCancel: {
                let waiter: CheckedContinuation<Bool, Never>? = lock.withLock {
                    if let index = state.waiters.firstIndex(where: { $0.id == id }) {
                        return state.waiters.remove(at: index).continuation
                    }
                    state.cancelled.insert(id)  // not queued yet: the enqueue above sees it
                    return nil
                }
                waiter?.resume(returning: false)
            }
            lock.withLock { _ = state.cancelled.remove(id) }
            if !granted { throw .cancelled }
        }
    }

    /// Hands the slot to the oldest waiter, or frees it.
    func release() {
        let next: CheckedContinuation<Bool, Never>? = lock.withLock {
            if !state.waiters.isEmpty { return state.waiters.removeFirst().continuation }
            state.inflight -= 1
            return nil
        }
        next?.resume(returning: true)
    }
}
