import Foundation

/// What runs behind answers: every kind of work the pipeline or the store
/// starts for later goes through ``BackgroundScheduler`` under one of these.
/// The raw value is the `kind` label of `/metrics`' `artcache_background_*`.
package enum BackgroundKind: String, CaseIterable, Sendable, Hashable {
    /// A conditional GET behind a stale answer (within stale-while-revalidate).
    case revalidation
    /// An original's size and placeholder, for a row stored without them.
    case placeholder
    /// A manifest's pending item fetched (with its thumbnails) before it is asked for.
    case warmUp = "warm_up"
    /// An original (and its record) written to the shared second tier behind its answer.
    case tier2Write = "tier2_write"
    /// A better format of a stored thumbnail, made when it pays.
    case formatUpgrade = "format_upgrade"
    /// Folding the access-time log into the index.
    case touchLogFold = "touch_log_fold"
    /// Deleting the files of evicted rows.
    case reclaim
    /// Dropping negative answers past their time and over their cap.
    case negativeCleanup = "negative_cleanup"
    /// A download or render whose last requester left (its deadline passed,
    /// its client went away), finished and stored so the next request is a
    /// hit (``Coalescer``'s adopter).
    case orphanedFlight = "orphaned_flight"

    /// Position in per-kind tables.
    var index: Int { Self.allCases.firstIndex(of: self)! }

    /// Most jobs of this kind running at once (nil: up to `[background]
    /// concurrency`). A format upgrade is optional work that renders at the
    /// lowest priority without the background share (it waits while
    /// answers render): one at a time, so upgrades waiting for the render
    /// pool never hold the slots revalidations and the reclaimer need.
    var maxRunning: Int? { self == .formatUpgrade ? 1 : nil }

    /// Jobs of this kind start only once no foreground request has been
    /// downloaded or rendered for `quietAfter`
    /// (``BackgroundScheduler/foregroundBegan()``): a format upgrade is
    /// optional work, and one AVIF at the slow effort holds a core for
    /// 20–300 ms, which a burst of cold answers needs.
    var waitsForQuiet: Bool { self == .formatUpgrade }
}

/// A job's identity: a job whose key is already queued or running is not
/// queued again (a second stale answer for one URL adds no revalidation).
package struct BackgroundJobKey: Hashable, Sendable, CustomStringConvertible {
    package let kind: BackgroundKind
    /// What the job is about (a cache key's hex, a URL key, a store's name).
    package let key: String
    /// What of it (sizes, a format, a row's sha256); empty when the key says all.
    package let spec: String

    package init(_ kind: BackgroundKind, key: String, spec: String = "") {
        self.kind = kind
        self.key = key
        self.spec = spec
    }

    package var description: String { "\(kind.rawValue):\(key)" + (spec.isEmpty ? "" : " \(spec)") }
}

/// `[background]`: the bounds of the work behind answers.
package struct BackgroundSettings: Sendable, Equatable {
    /// Jobs that may wait, per kind: past it the oldest of the lowest priority is dropped (and counted).
    package var maxQueued = 10_000
    /// Bytes that waiting jobs may hold in all (what their submitters said
    /// they keep: keys, lists; bytes of images are read when a job starts).
    package var maxBytes: Int64 = 64 << 20
    /// Jobs running at once.
    package var concurrency = 4
    /// How long no foreground request must have run before the kinds that
    /// wait for quiet (format upgrades) start. A burst of cold answers has
    /// instants with none in flight (each of 16 connections between its
    /// answer and its next request): started there, an upgrade took a
    /// render thread from the burst 2–3 times per P2b round (~50 ms each,
    /// 6–9% of the round's CPU). A page's requests come within tens of
    /// milliseconds of each other; upgrades wait a quarter of a second more.
    package var quietAfter: Duration = .milliseconds(250)

    package init() {}
}

/// What ``BackgroundScheduler/submit(_:priority:bytes:_:)`` did with a job.
package enum BackgroundSubmission: Sendable, Equatable {
    /// It waits for a place (or started at once).
    case queued
    /// The same key is already waiting or running: nothing added.
    case duplicate
    /// A bound was reached and this job, the oldest of the lowest priority, is the one dropped.
    case dropped
    /// The scheduler is closed.
    case closed
}

/// Counts of one kind, for `/metrics`.
package struct BackgroundCounts: Sendable, Equatable {
    package var queued = 0
    package var running = 0
    /// Dropped past a bound since the scheduler opened.
    package var dropped = 0
    /// Finished (run to the end or cancelled while running).
    package var finished = 0

    package init() {}
}
