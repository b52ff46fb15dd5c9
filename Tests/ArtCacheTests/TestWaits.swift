import Foundation
@testable import ArtCacheCore

/// Runs `body` in a task of its own and returns when it ends, or when the
/// calling task is cancelled, whichever comes first. A wait that ignores
/// cancellation (``Watched/wait(until:)``) then cannot outlive a test's
/// time limit: the test fails at its limit instead of hanging the run (the
/// abandoned wait stays suspended until its condition holds, if ever).
func untilCancelled(_ body: @escaping @Sendable () async -> Void) async {
    let state = Locked<(caller: CheckedContinuation<Void, Never>?, ended: Bool)>((nil, false))
    /// Ends the wait, once: the body ended, or the caller was cancelled.
    @Sendable func end() {
        let caller = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.ended = true
            defer { state.caller = nil }
            return state.caller
        }
        caller?.resume()
    }
    Task {  // left running when the caller is cancelled
        await body()
        end()
    }
    await withTaskCancellationHandler {
        await withCheckedContinuation { (caller: CheckedContinuation<Void, Never>) in
            let ended = state.withLock { state -> Bool in
                if !state.ended { state.caller = caller }
                return state.ended
            }
            if ended { caller.resume() }
        }
    } onCancel: {
        end()
    }
}

extension Watched {
    /// ``wait(until:)`` that the test's time limit can end (``untilCancelled(_:)``).
    func waitInTest(until predicate: @escaping @Sendable (Value) -> Bool) async {
        await untilCancelled { await self.wait(until: predicate) }
    }
}
