import Foundation
import Testing
@testable import ArtCacheCore

/// The stage accumulator behind `/metrics`' stage histograms and
/// `prefetch --json`'s `stages`.
@Suite("Stage timings")
struct StageTimingsTests {
    @Test func percentilesAreWithinABucketOfTheTrueValue() throws {
        let timings = StageTimings()
        // 1 ms, 2 ms, … 100 ms: p50 = 50 ms, p90 = 90 ms, p99 = 99 ms, max 100 ms.
        for ms in 1...100 { timings.record(.download, nanoseconds: Int64(ms) * 1_000_000) }
        let summary = timings.summary(.download)
        #expect(summary.count == 100)
        #expect(summary.sumNanoseconds == 5050 * 1_000_000)
        #expect(summary.maxSeconds == 0.1)
        for (fraction, expected) in [(0.5, 0.050), (0.9, 0.090), (0.99, 0.099)] {
            let value = try #require(summary.percentile(fraction))
            #expect(value >= expected && value <= expected * 1.0625, "p\(Int(fraction * 100)) = \(value)")
        }
        #expect(summary.percentile(1.0) == 0.1)
        // Other stages are untouched.
        #expect(timings.summary(.render).count == 0)
        #expect(timings.summary(.render).percentile(0.5) == nil)
        #expect(timings.summary(.render).maxSeconds == nil)
    }

    @Test func oneSampleIsEveryPercentile() {
        let timings = StageTimings()
        timings.record(.render, nanoseconds: 1_234_567)
        let summary = timings.summary(.render)
        for fraction in [0.5, 0.9, 0.99] { #expect(summary.percentile(fraction) == 0.001234567) }
    }

    @Test func bucketsCoverEveryValueInOrder() {
        var previous = -1
        for value in [0, 1, 15, 16, 17, 31, 32, 1000, 999_999, 1 << 30, 1 << 39, (1 << 40) - 1, 1 << 40, Int64.max] as [Int64] {
            let bucket = StageTimings.bucket(of: value)
            #expect(bucket >= previous && bucket < StageTimings.bucketCount, "\(value) -> \(bucket)")
            if value < 1 << 40 { #expect(StageTimings.upperBound(of: bucket) >= value, "\(value)") }
            previous = bucket
        }
        #expect(StageTimings.bucket(of: 16) != StageTimings.bucket(of: 17))
    }

    @Test func observersSeeEveryRecord() {
        let timings = StageTimings()
        let seen = Locked<[(Stage, Int64)]>([])
        timings.record(.answer, nanoseconds: 5)  // before observing: not seen
        timings.observe { stage, nanoseconds in seen.withLock { $0.append((stage, nanoseconds)) } }
        timings.record(.storeCommit, nanoseconds: 42)
        timings.record(.sniffHash, since: ContinuousClock.now)
        let got = seen.withLock { $0 }
        #expect(got.map(\.0) == [.storeCommit, .sniffHash])
        #expect(got.first?.1 == 42)
        #expect(Stage.allCases.map(\.name) == ["admission", "download", "sniff_hash", "render", "store_commit", "answer"])
    }
}
