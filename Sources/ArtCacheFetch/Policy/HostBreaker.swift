import ArtCacheCore
import Foundation

/// Offline as a state, not one timeout per URL: per host, network failures
/// (DNS, connect, connect timeout: the host was not reached) in a row are
/// counted; at `[download] offline_after` the host's breaker opens and its
/// URLs fail at once as `host_offline` (they go to the retry queue) instead
/// of each running its own retries with backoff. After `coolDown` one attempt
/// is let through again; any answer from the host (even an HTTP error)
/// closes the breaker. A timeout after connecting does not count: that host
/// is there, only slow.
///
/// The map forgets, because a long-lived pipeline (`serve`) meets hosts
/// without end: a host whose last failure is `forgetAfter` old and whose
/// breaker is not open (or opened `coolDown` ago and not probed since) is
/// dropped, so "in a row" means within that window; and at most `maxHosts`
/// hosts are kept (past that, the closed ones that failed longest ago go
/// first, a tenth at a time so that a flood of new hosts does not sort the
/// map once each).
///
/// One per `Downloader`, so a breaker lasts one run (`prefetch`) or one
/// pipeline's life. The shared second tier has one of its own too (one key,
/// its endpoint; every failure counts there: a tier that answers 5xx or
/// slowly is no better than one not reached): one breaker type, one
/// half-open rule — exactly one probe per cool-down, every other caller
/// refused until the probe answers (closed) or fails (open again).
package final class HostBreaker: Sendable {
    struct HostState: Sendable {
        var failures = 0
        var openedAt: Date?
        var refused = 0
        var lastFailure: Date
        /// The last failure's cause (`connection refused`): what an offline host's refusals name.
        var cause: String?
    }

    struct Table: Sendable {
        var hosts: [String: HostState] = [:]
        var lastSweep = Date.distantPast
    }

    let threshold: Int
    let coolDown: TimeInterval
    let forgetAfter: TimeInterval
    let maxHosts: Int
    private let table = Locked(Table())

    package init(threshold: Int, coolDown: TimeInterval = 30, forgetAfter: TimeInterval = 600, maxHosts: Int = 10_000) {
        self.threshold = max(1, threshold)
        self.coolDown = coolDown
        self.forgetAfter = forgetAfter
        self.maxHosts = max(1, maxHosts)
    }

    /// True while `host` is offline: its breaker opened less than `coolDown` ago.
    /// Past the cool-down the next caller goes through (and a failure reopens it).
    package func refuses(_ host: String, now: Date = Date()) -> Bool {
        table.withLock { table in
            guard let opened = table.hosts[host]?.openedAt else { return false }
            if now.timeIntervalSince(opened) < coolDown {
                table.hosts[host]?.refused += 1
                return true
            }
            table.hosts[host]?.openedAt = now  // one probe per cool-down
            return false
        }
    }

    /// A failure of one attempt; DNS and connect failures and connect
    /// timeouts (`DownloadError.hostUnreachable`) count toward offline.
    func record(_ error: DownloadError, host: String, now: Date = Date()) {
        guard error.hostUnreachable else { return }
        recordFailure(host, cause: error.cause ?? error.reason, now: now)
    }

    /// A failure of one attempt at `host`, whatever it was: true when it
    /// opened the breaker (or opened it again after a failed probe).
    @discardableResult
    package func recordFailure(_ host: String, cause: String, now: Date = Date()) -> Bool {
        table.withLock { table in
            if now.timeIntervalSince(table.lastSweep) >= forgetAfter { sweep(&table, now: now) }
            var state = table.hosts[host].flatMap { isStale($0, now: now) ? nil : $0 } ?? HostState(lastFailure: now)
            if table.hosts[host] == nil, table.hosts.count >= maxHosts { makeRoom(&table, now: now) }
            state.failures += 1
            state.lastFailure = now
            state.cause = cause
            let opened = state.failures >= threshold
            if opened { state.openedAt = now }
            table.hosts[host] = state
            return opened
        }
    }

    /// The host answered: it is online.
    package func recordAnswer(host: String) {
        table.withLock { table in
            guard table.hosts[host] != nil else { return }
            table.hosts[host] = nil
        }
    }

    /// Why `host` is offline (its last failure's cause and the failures in a
    /// row) while its breaker is open; nil when it is not.
    func offlineCause(_ host: String) -> (cause: String, failures: Int)? {
        table.withLock { table in
            guard let state = table.hosts[host], state.openedAt != nil else { return nil }
            return (state.cause ?? "network failures", state.failures)
        }
    }

    /// Hosts whose breaker is open now, with the URLs refused so far.
    var offlineHosts: [String: Int] {
        table.withLock { $0.hosts.filter { $0.value.openedAt != nil }.mapValues(\.refused) }
    }

    /// Hosts the breaker keeps state for.
    var trackedHosts: Int { table.withLock { $0.hosts.count } }

    /// No failure for `forgetAfter`, and no breaker open within its cool-down.
    private func isStale(_ state: HostState, now: Date) -> Bool {
        guard now.timeIntervalSince(state.lastFailure) >= forgetAfter else { return false }
        return state.openedAt.map { now.timeIntervalSince($0) >= coolDown } ?? true
    }

    private func sweep(_ table: inout Table, now: Date) {
        table.hosts = table.hosts.filter { !isStale($0.value, now: now) }
        table.lastSweep = now
    }

    /// Below `maxHosts` again: stale hosts go, then (a tenth of the map at
    /// once) the closed ones that failed longest ago, then open ones.
    private func makeRoom(_ table: inout Table, now: Date) {
        sweep(&table, now: now)
        guard table.hosts.count >= maxHosts else { return }
        let excess = table.hosts.count - maxHosts + max(1, maxHosts / 10)
        let order = table.hosts.sorted { a, b in
            (a.value.openedAt == nil ? 0 : 1, a.value.lastFailure) < (b.value.openedAt == nil ? 0 : 1, b.value.lastFailure)
        }
        for (host, _) in order.prefix(excess) { table.hosts[host] = nil }
    }
}
