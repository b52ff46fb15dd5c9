import Foundation

/// A counting semaphore for async code whose waiters are served by priority
/// (highest first, then first come): waiting suspends, never blocks a thread.
/// A waiter whose task is cancelled leaves the queue at once; a waiter's
/// priority may change while it waits.
final class PriorityPermits: Sendable {
    private struct Waiter {
        var priority: ImagePriority
        let sequence: Int
        let continuation: CheckedContinuation<Void, Error>
    }

    private struct State {
        var available: Int
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
        var cancelled: Set<Int> = []

        /// The waiter to serve next: highest priority, then oldest.
        mutating func takeBest() -> CheckedContinuation<Void, Error>? {
            guard let best = waiters.min(by: { a, b in
                a.value.priority != b.value.priority ? a.value.priority > b.value.priority : a.value.sequence < b.value.sequence
            }) else { return nil }
            waiters[best.key] = nil
            return best.value.continuation
        }
    }

    private let state: Locked<State>

    init(count: Int) { state = Locked(State(available: count)) }

    /// Waiters not yet served (for tests and metrics).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waits for a permit. Throws `CancellationError` (holding no permit)
    /// when the calling task is cancelled before one is granted.
    func acquire(priority: PriorityHandle) async throws {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await priority.whileObserving({ [state] newValue in
            state.withLock { s in s.waiters[id]?.priority = newValue }
        }) {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                    let granted = state.withLock { s -> Bool? in
                        if s.cancelled.remove(id) != nil { return nil }
                        if s.available > 0 {
                            s.available -= 1
                            return true
                        }
                        s.waiters[id] = Waiter(priority: priority.value, sequence: id, continuation: continuation)
                        return false
                    }
                    switch granted {
                    case nil: continuation.resume(throwing: CancellationError())
                    case true?: continuation.resume()
                    case false?: break
                    }
                }
            } onCancel: {
                let waiter = state.withLock { s -> CheckedContinuation<Void, Error>? in
                    if let waiter = s.waiters.removeValue(forKey: id) { return waiter.continuation }
                    s.cancelled.insert(id)  // not queued yet (or already granted: release() below clears it)
                    return nil
                }
                waiter?.resume(throwing: CancellationError())
            }
        }
        state.withLock { _ = $0.cancelled.remove(id) }
    }

    func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Error>? in
            if let next = s.takeBest() { return next }
            s.available += 1
            return nil
        }
        next?.resume()
    }
}
