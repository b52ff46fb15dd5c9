import ArtCacheCore

/// The store's closed gate for puts: a put is admitted (``enter()``) before
/// it writes anything, its temp file included, and leaves when it returned;
/// ``close()`` shuts the gate and waits until every admitted put has left.
///
/// So when the store's `close()` releases the writer lock, no put of this
/// process is between writing a temp file named with that lock's token and
/// committing it: a temp file is never written under a released token (where
/// `verify` or another process's open would take it for a dead writer's and
/// remove it while in use). A put arriving after `close()` began is refused
/// with `StoreError.closed` before it writes anything.
final class WriteGate: Sendable {
    private struct State: Sendable {
        var closed = false
        var admitted = 0
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    /// Admits a put; throws `.closed` once ``close()`` was called.
    func enter() throws(StoreError) {
        let admitted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.admitted += 1
            return true
        }
        guard admitted else { throw StoreError(.closed, "the cache is closed: nothing was written") }
    }

    /// A put admitted by ``enter()`` is done (committed or failed).
    func leave() {
        let drained = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.admitted -= 1
            guard state.admitted == 0 else { return [] }
            defer { state.drained = [] }
            return state.drained
        }
        for waiter in drained { waiter.resume() }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Shuts the gate and returns once no admitted put is left. Not
    /// cancellable: the puts it waits for are already on their way (each
    /// waits at most for the group commit in progress and its own).
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                state.closed = true
                guard state.admitted > 0 else { return true }
                state.drained.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
