@_spi(Benchmarks) import ArtCacheCore
import Foundation

/// Offline as a state, not one timeout per URL: per host, network failures
/// (DNS, connect) in a row are counted; at `[download] offline_after` the
/// host's breaker opens and its URLs fail at once as `host_offline` (they go
/// to the retry queue) instead of each running its own retries with backoff.
/// After `coolDown` one attempt is let through again; any answer from the
/// host (even an HTTP error) closes the breaker.
///
/// One per `Downloader`, so a breaker lasts one run (`prefetch`) or one
/// pipeline's life.
final class HostBreaker: Sendable {
    struct HostState: Sendable {
        var failures = 0
        var openedAt: Date?
        var refused = 0
    }

    let threshold: Int
    let coolDown: TimeInterval
    private let hosts = Locked([String: HostState]())

    init(threshold: Int, coolDown: TimeInterval = 30) {
        self.threshold = max(1, threshold)
        self.coolDown = coolDown
    }

    /// True while `host` is offline: its breaker opened less than `coolDown` ago.
    /// Past the cool-down the next caller goes through (and a failure reopens it).
    func refuses(_ host: String, now: Date = Date()) -> Bool {
        hosts.withLock { hosts in
            guard let opened = hosts[host]?.openedAt else { return false }
            if now.timeIntervalSince(opened) < coolDown {
                hosts[host]?.refused += 1
                return true
            }
            hosts[host]?.openedAt = now  // one probe per cool-down
            return false
        }
    }

    /// A failure of one attempt; DNS and connect failures count toward offline.
    func record(_ error: DownloadError, host: String, now: Date = Date()) {
        guard error.code == .dns || error.code == .connect else { return }
        hosts.withLock { hosts in
            var state = hosts[host, default: HostState()]
            state.failures += 1
            if state.failures >= threshold { state.openedAt = now }
            hosts[host] = state
        }
    }

    /// The host answered: it is online.
    func recordAnswer(host: String) {
        hosts.withLock { hosts in
            guard hosts[host] != nil else { return }
            hosts[host] = nil
        }
    }

    /// Hosts whose breaker is open now, with the URLs refused so far.
    var offlineHosts: [String: Int] {
        hosts.withLock { $0.filter { $0.value.openedAt != nil }.mapValues(\.refused) }
    }
}
