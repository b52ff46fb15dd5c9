@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheResultSets
@testable import ArtCacheStore
import Foundation
import Testing

/// The pipeline's work behind answers goes through its one scheduler
/// (issue 34): warm-ups deduplicated, revalidations bounded, a close that
/// never waits on the network, and the negative table capped.
@Suite("Pipeline background work", .timeLimit(.minutes(2)))
struct PipelineBackgroundTests {
    static let jpeg = try! Fixtures.image(width: 120, height: 90, suffix: ".jpg")

    /// The same result set posted 50 times: each pending item is queued
    /// once (its warm-up waits or runs), and fetched once.
    @Test func aResultSetPostedFiftyTimesQueuesEachItemOnce() async throws {
        let h = try await LoopbackHarness { $0.download.retries = 0; $0.background.concurrency = 2 }
        for index in 0..<8 { h.origin.register("w\(index).jpg", .init(body: Self.jpeg, contentType: "image/jpeg")) }
        // Every background slot taken until the test has posted them all:
        // the warm-ups can only wait (or be found waiting).
        let gate = BackgroundSchedulerTests.Gate()
        for index in 0..<2 {
            h.pipeline.background.submit(BackgroundJobKey(.reclaim, key: "test-blocker-\(index)"), priority: .veryHigh) {
                await gate.wait()
            }
        }
        await h.pipeline.background.waitForLoad { $0.running == 2 }
        let set = ResultSet(format: .urls, urls: (0..<8).map { h.url("/img/w\($0).jpg") })
        for _ in 0..<50 {
            let manifest = try await h.pipeline.manifest(for: set, sizes: [ImageSize(width: 40, height: 40)])
            #expect(manifest.items.allSatisfy { $0.status == .pending })
        }
        let counts = try #require(h.pipeline.background.counts[.warmUp])
        #expect(counts.queued == 8, "\(counts)")
        #expect(counts.dropped == 0)
        #expect(h.origin.totalRequests == 0)
        gate.release()
        await h.pipeline.background.waitUntilIdle(.warmUp)
        for index in 0..<8 { #expect(h.origin.requestCount("/img/w\(index).jpg") == 1) }
        // Warmed: the original and both sizes are stored.
        let manifest = try await h.pipeline.manifest(for: set, sizes: [ImageSize(width: 40, height: 40)])
        #expect(manifest.items.allSatisfy { $0.status == .cached })
        #expect(h.pipeline.background.counts[.warmUp]?.finished == 8)
        try await h.pipeline.close()
    }

    /// Many distinct stale entries at once: each is answered stale at once;
    /// their revalidations wait within `max_queued` and the excess is
    /// dropped and counted (revalidated by a later request), never an
    /// unbounded queue.
    @Test func staleAnswersAreImmediateAndTheirRevalidationsBounded() async throws {
        let h = try await LoopbackHarness {
            $0.download.retries = 0
            $0.cache.staleWhileRevalidate = 86400
            $0.background.maxQueued = 5
            $0.background.concurrency = 1
        }
        let names = (0..<40).map { "s\($0).jpg" }
        for name in names {
            h.origin.register(name, .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"v1\""))
        }
        for name in names { _ = try await h.pipeline.image(ImageRequest(url: h.url("/img/\(name)"))) }
        await h.store.waitForWritesBehind()
        // The one background slot is taken: revalidations can only wait.
        let gate = BackgroundSchedulerTests.Gate()
        h.pipeline.background.submit(BackgroundJobKey(.reclaim, key: "test-blocker"), priority: .veryHigh) { await gate.wait() }
        await h.pipeline.background.waitForLoad { $0.running == 1 }
        let answers = try await withThrowingTaskGroup(of: ImageResponse.Source.self) { group in
            for name in names { group.addTask { try await h.pipeline.image(ImageRequest(url: h.url("/img/\(name)"))).source } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 40 && answers.allSatisfy { $0 == .stale }, "\(answers)")
        let counts = try #require(h.pipeline.background.counts[.revalidation])
        #expect(counts.queued == 5)
        #expect(counts.dropped == 35)
        for name in names { #expect(h.origin.requestCount("/img/\(name)") == 1, "no revalidation ran yet") }
        gate.release()
        await h.pipeline.waitForRevalidations()
        let revalidated = names.filter { h.origin.requestCount("/img/\($0)") == 2 }.count
        #expect(revalidated == 5)
        #expect(h.pipeline.freshnessCounters.revalidated304 == 5)
        try await h.pipeline.close()
    }

    /// close() with 3,000 warm-ups queued and the running ones stuck on an
    /// origin that does not answer: it returns without waiting for them (the
    /// waiting are dropped, the running cancelled), and the cache stays
    /// consistent.
    @Test func closeDoesNotWaitForABacklogOrTheNetwork() async throws {
        let h = try await LoopbackHarness { $0.download.retries = 0; $0.background.concurrency = 4 }
        h.origin.register("x.jpg", .init(body: Self.jpeg, contentType: "image/jpeg"))
        for index in 0..<3000 {
            let result = h.pipeline.warmUp(h.url("/gate/x.jpg?i=\(index)"), sizes: [ImageSize(width: 32, height: 32)], fit: .cover)
            #expect(result == .queued)
        }
        await h.origin.waitForRequests(4)
        #expect(h.pipeline.background.counts[.warmUp]?.running == 4)
        // The gate stays closed: had close() waited for a download, it
        // would hold until the origin's 30 s and the suite's limit.
        try await h.pipeline.close()
        let counts = try #require(h.pipeline.background.counts[.warmUp])
        #expect(counts.queued == 0 && counts.running == 0)
        #expect(h.origin.requestLog.count <= 4, "no warm-up started after the close began")
        h.origin.openGate()
        let reopened = try await Fixtures.pipeline(h.dir.path)
        let report = try await reopened.verify(hash: true)
        #expect(report.problemCount == 0, "\(report)")
        try await reopened.close()
    }

    /// The negative table is cleaned behind the answers: past their time and
    /// over `negative_max` (oldest first), by one job however many failures.
    @Test func negativeAnswersAreCappedBehindTheAnswers() async throws {
        let h = try await LoopbackHarness {
            $0.download.retries = 0
            $0.download.negativeMax = 3
        }
        for index in 0..<10 {
            await #expect(throws: ArtCacheError.self) { try await h.pipeline.image(ImageRequest(url: h.url("/status/404?n=\(index)"))) }
        }
        await h.pipeline.background.waitUntilIdle(.negativeCleanup)
        let kept = try await h.store.negatives.rowCount()
        #expect(kept == 3)
        #expect((h.pipeline.background.counts[.negativeCleanup]?.finished ?? 0) >= 1)
        try await h.pipeline.close()
    }
}
