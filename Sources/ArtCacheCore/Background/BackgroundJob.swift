import Foundation

/// A kind of work behind answers, declared by whoever submits it (the
/// pipeline, the store, the tier declare theirs; the scheduler knows none
/// of them in advance): its name, how many of it may run at once, and
/// whether it waits for quiet. Each job's priority comes with its
/// submission (``BackgroundScheduler/submit(_:priority:bytes:again:onDrop:_:)``).
/// The name is the `kind` label of `/metrics`' `artcache_background_*`;
/// two kinds with one name are one kind (the scheduler refuses a second
/// declaration with other limits).
package struct BackgroundKind: Sendable, Hashable, CustomStringConvertible {
    /// The `kind` label (`warm_up`, `tier2_write`…).
    package let name: String
    /// Most jobs of this kind running at once (nil: up to `[background]
    /// concurrency`).
    package let maxRunning: Int?
    /// Jobs of this kind start only once no foreground request has been
    /// downloaded or rendered for `quietAfter`
    /// (``BackgroundScheduler/foregroundBegan()``).
    package let waitsForQuiet: Bool

    package init(_ name: String, maxRunning: Int? = nil, waitsForQuiet: Bool = false) {
        precondition(maxRunning.map { $0 > 0 } ?? true, "a kind that may never run")
        self.name = name
        self.maxRunning = maxRunning
        self.waitsForQuiet = waitsForQuiet
    }

    package static func == (a: BackgroundKind, b: BackgroundKind) -> Bool { a.name == b.name }
    package func hash(into hasher: inout Hasher) { hasher.combine(name) }
    package var description: String { name }
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

    package var description: String { "\(kind.name):\(key)" + (spec.isEmpty ? "" : " \(spec)") }
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
