import ArtCacheCore
import ArtCachePipeline
import Foundation

/// `prefetch --json`: the summary's fields, unchanged, plus `stages`: per
/// stage the run went through, how many times it ran and its percentiles
/// in seconds (`null` when it never ran).
struct PrefetchReport: Encodable {
    let summary: PrefetchSummary
    let stages: [String: StageReport]

    /// The stages a prefetch runs (admission and answer are the service's).
    static let reported: [Stage] = [.download, .sniffHash, .render, .storeCommit]

    init(summary: PrefetchSummary, timings: StageTimings) {
        self.summary = summary
        stages = Dictionary(uniqueKeysWithValues: Self.reported.map { ($0.name, StageReport(timings.summary($0))) })
    }

    private enum Keys: String, CodingKey { case stages }

    func encode(to encoder: Encoder) throws {
        try summary.encode(to: encoder)  // the stable fields, as before
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(stages, forKey: .stages)
    }
}

/// One stage's count and percentiles (seconds, to the microsecond).
struct StageReport: Encodable {
    let count: Int
    @Nullable var p50: Double?
    @Nullable var p90: Double?
    @Nullable var p99: Double?
    @Nullable var max: Double?

    init(_ summary: StageTimings.Summary) {
        func micro(_ seconds: Double?) -> Double? { seconds.map { ($0 * 1e6).rounded() / 1e6 } }
        count = summary.count
        p50 = micro(summary.percentile(0.5))
        p90 = micro(summary.percentile(0.9))
        p99 = micro(summary.percentile(0.99))
        max = micro(summary.maxSeconds)
    }
}
