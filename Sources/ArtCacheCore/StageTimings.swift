import Foundation

/// The timed stages of a request's work: `/metrics`'
/// `artcache_stage_seconds{stage}` and `prefetch --json`'s `stages`.
/// Only stages that ran are recorded: a memory hit has no download, no render.
package enum Stage: Int, CaseIterable, Sendable {
    /// Waiting for an admission slot of the service (recorded by the server).
    case admission
    /// An origin request, from asking the downloader (its per-host and
    /// total queues included) to the whole body, retries included.
    case download
    /// Sniffing a downloaded body (refusal, type repair) and its SHA-256,
    /// before it is stored.
    case sniffHash
    /// Rendering thumbnails from one decode, from asking the render pool
    /// (its queue included) to the encoded bytes.
    case render
    /// One write (an original, a variant) through the group commit, from
    /// joining the write queue to its durable commit.
    case storeCommit
    /// From the image in hand to the response handed to the connection
    /// (recorded by the server).
    case answer

    /// The name in `stage="…"` and in JSON.
    package var name: String {
        switch self {
        case .admission: "admission"
        case .download: "download"
        case .sniffHash: "sniff_hash"
        case .render: "render"
        case .storeCommit: "store_commit"
        case .answer: "answer"
        }
    }
}

/// Durations of stages, kept for percentiles (per stage: count, sum,
/// maximum and a log-linear histogram, 16 buckets per power of two: a
/// percentile is within 6.25 % of the true value), and handed to observers
/// (the service's Prometheus histograms). Bounded memory however long the
/// process runs; a record takes one lock and allocates nothing.
///
/// `@unchecked Sendable` is sound: `state` and `observers` are read and
/// written only while `lock` (a pthread mutex, `NSLock`, which
/// ThreadSanitizer sees) is held; observers are `@Sendable` and are called
/// after it is released.
package final class StageTimings: @unchecked Sendable {
    /// What one stage recorded.
    package struct Summary: Sendable, Equatable {
        package var count = 0
        package var sumNanoseconds: Int64 = 0
        package var maxNanoseconds: Int64 = 0
        /// Counts per bucket (``StageTimings/bucket(of:)``).
        var buckets: [Int] = []

        /// The value at or under which `fraction` (0…1) of the samples lie
        /// (nearest rank), in seconds: the upper bound of its bucket, never
        /// above the maximum. nil when nothing was recorded.
        package func percentile(_ fraction: Double) -> Double? {
            guard count > 0 else { return nil }
            let rank = Swift.max(1, Int((fraction * Double(count)).rounded(.up)))
            var seen = 0
            for (index, n) in buckets.enumerated() where n > 0 {
                seen += n
                if seen >= rank {
                    return Double(Swift.min(StageTimings.upperBound(of: index), maxNanoseconds)) / 1e9
                }
            }
            return Double(maxNanoseconds) / 1e9
        }

        package var maxSeconds: Double? { count > 0 ? Double(maxNanoseconds) / 1e9 : nil }
        package var sumSeconds: Double { Double(sumNanoseconds) / 1e9 }
    }

    private struct State {
        var counts = [Int](repeating: 0, count: Stage.allCases.count * StageTimings.bucketCount)
        var totals = [(count: Int, sum: Int64, max: Int64)](repeating: (0, 0, 0), count: Stage.allCases.count)
    }

    private let lock = NSLock()
    private var state = State()
    private var observers: [@Sendable (Stage, Int64) -> Void] = []

    package init() {}

    /// Adds an observer, called with every duration recorded from now on
    /// (nanoseconds), on the recording thread, outside the lock: it must be cheap.
    package func observe(_ observer: @escaping @Sendable (Stage, Int64) -> Void) {
        lock.withLock { observers.append(observer) }
    }

    /// Records `stage` as having taken from `start` until now.
    package func record(_ stage: Stage, since start: ContinuousClock.Instant) {
        record(stage, nanoseconds: Self.nanoseconds(ContinuousClock.now - start))
    }

    package func record(_ stage: Stage, nanoseconds: Int64) {
        let value = Swift.max(0, nanoseconds)
        let index = stage.rawValue * Self.bucketCount + Self.bucket(of: value)
        let observers = lock.withLock { () -> [@Sendable (Stage, Int64) -> Void] in
            state.counts[index] += 1
            state.totals[stage.rawValue].count += 1
            state.totals[stage.rawValue].sum &+= value
            if value > state.totals[stage.rawValue].max { state.totals[stage.rawValue].max = value }
            return self.observers
        }
        for observer in observers { observer(stage, value) }
    }

    /// What `stage` recorded so far.
    package func summary(_ stage: Stage) -> Summary {
        lock.withLock {
            let totals = state.totals[stage.rawValue]
            let start = stage.rawValue * Self.bucketCount
            return Summary(count: totals.count, sumNanoseconds: totals.sum, maxNanoseconds: totals.max,
                           buckets: Array(state.counts[start..<start + Self.bucketCount]))
        }
    }

    package static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    // MARK: Buckets

    /// Values up to 2^40 ns (about 18 minutes); longer ones count in the last bucket.
    static let maxExponent = 40
    static let bucketCount = (maxExponent - 3) * 16

    /// Values 0…15 ns have a bucket each; above, 16 buckets per power of two.
    static func bucket(of nanoseconds: Int64) -> Int {
        let value = UInt64(Swift.min(nanoseconds, (1 << maxExponent) - 1))
        if value < 16 { return Int(value) }
        let exponent = 63 - value.leadingZeroBitCount  // 4…maxExponent-1
        let sub = Int((value >> UInt64(exponent - 4)) & 15)
        return (exponent - 3) * 16 + sub
    }

    /// The largest value that falls in bucket `index`.
    static func upperBound(of index: Int) -> Int64 {
        if index < 16 { return Int64(index) }
        let exponent = index / 16 + 3
        let sub = Int64(index % 16)
        return ((16 + sub + 1) << Int64(exponent - 4)) - 1
    }
}
