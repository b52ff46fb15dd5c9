import ArtCacheCore
import Foundation

/// `GET /health`, cheap whatever the rate at which it is asked: the
/// pipeline's check (an index read and a 1x1 render) runs at most once per
/// `maxAge`; requests in between get the last result, and requests that
/// arrive while a check runs share it. So an unauthenticated flood of
/// `/health` costs one tiny render per `maxAge`, never a queue of renders
/// ahead of image requests.
final class HealthCheck: Sendable {
    private struct State {
        var last: (at: ContinuousClock.Instant, result: Result<Void, ArtCacheError>)?
        var running: Task<Result<Void, ArtCacheError>, Never>?
        /// Checks run so far (tests).
        var checks = 0
    }

    let maxAge: Duration
    private let check: @Sendable () async -> Result<Void, ArtCacheError>
    private let state = Locked(State())

    init(maxAge: Duration, check: @escaping @Sendable () async -> Result<Void, ArtCacheError>) {
        self.maxAge = maxAge
        self.check = check
    }

    /// Checks run so far.
    var checks: Int { state.withLock { $0.checks } }

    /// The last result when it is younger than `maxAge`, else a new check's
    /// (shared with every caller that arrives while it runs).
    func result() async -> Result<Void, ArtCacheError> {
        let now = ContinuousClock.now
        let (cached, running) = state.withLock { s -> (Result<Void, ArtCacheError>?, Task<Result<Void, ArtCacheError>, Never>?) in
            if let last = s.last, now - last.at < maxAge { return (last.result, nil) }
            if let running = s.running { return (nil, running) }
            s.checks += 1
            let check = self.check
            let task = Task { [weak self] () -> Result<Void, ArtCacheError> in
                let result = await check()
                self?.state.withLock { s in
                    s.last = (ContinuousClock.now, result)
                    s.running = nil
                }
                return result
            }
            s.running = task
            return (nil, task)
        }
        if let cached { return cached }
        return await running!.value  // one of the two is set above
    }
}
