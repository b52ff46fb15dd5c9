import ArtCacheCore
import Foundation

/// Offline as a state, not one timeout per URL: per host, network failures
/// (DNS, connect, connect timeout: the host was not reached) in a row are
/// counted; at `[download] offline_after` the host's breaker opens and its
/// URLs fail at once as `host_offline` (they go to the retry queue) instead
/// of each running its own retries with backoff. After `coolDown` one attempt
/// is let through again, the probe (``admit(_:now:)``). Every outcome of an
/// attempt is recorded (``record(_:host:pass:now:)``, issue 58):
/// - the host was not reached (DNS, connect, a timeout before connecting):
///   a failure in a row; a probe's opens the breaker again for `coolDown`;
/// - the host was reached: any answer (even an HTTP error), a timeout after
///   connecting (that host is there, only slow), a TLS failure (it took the
///   connection; its URLs fail fast on their own, holding no one up), a
///   broken, short or too large body: the breaker closes (and a streak of
///   failures ends);
/// - nothing was learnt (the probe was cancelled, or refused before any
///   connection): the probe's slot is given back (``release(_:host:now:)``),
///   the next caller probes at once instead of a cool-down later.
///
/// A probe that never reports holds the others off for one `coolDown` at
/// most: then the next caller is let through as the probe.
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
/// half-open rule — exactly one probe at a time, every other caller
/// refused until the probe answers (closed), fails (open again) or is
/// cancelled (the next caller probes).
package final class HostBreaker: Sendable {
    struct HostState: Sendable {
        var failures = 0
        var openedAt: Date?
        var refused = 0
        var lastFailure: Date
        /// The last failure's cause (`connection refused`): what an offline host's refusals name.
        var cause: String?
        /// The probe let through after the cool-down (its ``Pass/probe``), until it reports.
        var probe: UInt64?
    }

    struct Table: Sendable {
        var hosts: [String: HostState] = [:]
        var lastSweep = Date.distantPast
        /// Probes let through so far (each probe's number).
        var probes: UInt64 = 0
    }

    /// An attempt ``admit(_:now:)`` let through: with the breaker closed, or
    /// as the one probe after its cool-down.
    package struct Pass: Sendable, Equatable {
        /// The probe's number; nil: the breaker was closed.
        package let probe: UInt64?
        package static let closed = Pass(probe: nil)
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

    /// Whether an attempt at `host` may go: nil while it is offline (its
    /// breaker opened less than `coolDown` ago, or a probe let through
    /// since is still out); past the cool-down the next caller goes as the
    /// probe, and its outcome decides (``record(_:host:pass:now:)``).
    package func admit(_ host: String, now: Date = Date()) -> Pass? {
        table.withLock { table in
            guard let opened = table.hosts[host]?.openedAt else { return .closed }
            if now.timeIntervalSince(opened) < coolDown {
                table.hosts[host]?.refused += 1
                return nil
            }
            table.probes += 1
            table.hosts[host]?.openedAt = now  // one probe per cool-down
            table.hosts[host]?.probe = table.probes
            return Pass(probe: table.probes)
        }
    }

    /// True while `host` is offline (``admit(_:now:)`` without the pass:
    /// a probe let through this way is released only by an outcome).
    package func refuses(_ host: String, now: Date = Date()) -> Bool {
        admit(host, now: now) == nil
    }

    /// Whether `host`'s breaker is open now (nothing is let through or counted).
    func isOpen(_ host: String, now: Date = Date()) -> Bool {
        table.withLock { table in
            guard let opened = table.hosts[host]?.openedAt else { return false }
            return now.timeIntervalSince(opened) < coolDown
        }
    }

    /// What an attempt let through by `pass` (nil: by ``refuses(_:now:)``)
    /// showed about `host`: not reached (`DownloadError.hostUnreachable`) is
    /// a failure toward offline; reached (``DownloadError/reachedHost``)
    /// closes the breaker; anything else (cancelled, refused before
    /// connecting) gives a probe's slot back.
    func record(_ error: DownloadError, host: String, pass: Pass? = nil, now: Date = Date()) {
        if error.hostUnreachable {
            recordFailure(host, cause: error.cause ?? error.reason, now: now)
        } else if error.reachedHost {
            recordAnswer(host: host)
        } else if let pass {
            release(pass, host: host, now: now)
        }
    }

    /// The probe `pass` ended without showing anything about `host` (its
    /// caller cancelled it): its slot is free, the next caller is the probe
    /// at once rather than a cool-down later. Nothing for a pass of a closed
    /// breaker, or a probe whose outcome is recorded or that a later one
    /// replaced.
    package func release(_ pass: Pass, host: String, now: Date = Date()) {
        guard let probe = pass.probe else { return }
        table.withLock { table in
            guard table.hosts[host]?.probe == probe else { return }
            table.hosts[host]?.probe = nil
            table.hosts[host]?.openedAt = now.addingTimeInterval(-coolDown)
        }
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
            state.probe = nil  // a probe's failure is its outcome; any other ends the probe's claim too
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
