@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// What requests can grow is bounded, each by a documented limit.
@Suite("Bounds", .timeLimit(.minutes(3)))  // 3: under TSan the whole suite shares 2 cores
struct BoundsTests {
    /// Placeholders are kept by size and format, which requests choose:
    /// at most `placeholderMemoLimit` (64) of them.
    @Test func placeholdersMadeAreBounded() async throws {
        let h = try await LoopbackHarness()
        for side in 1...100 {
            let response = try await h.pipeline.image(ImageRequest(url: h.url("/status/404"), width: side, height: side,
                                                                   options: .placeholderOnFailure))
            #expect(response.source == .placeholder && response.width == side)
        }
        #expect(h.pipeline.requests.placeholders.count <= Requests.placeholderMemoLimit)
        try await h.pipeline.close()
    }

    /// Past `maxWaiting`, the oldest waiting prefetches are dropped (their
    /// batch reports them cancelled); the newest wait; the one running is kept.
    @Test func prefetchesWaitingAreBounded() async throws {
        let h = try await LoopbackHarness()
        for index in 0..<20 {
            h.origin.register("p\(index).jpg", .init(body: try Fixtures.image(suffix: ".jpg"), contentType: "image/jpeg"))
        }
        let prefetcher = ImagePrefetcher(pipeline: h.pipeline, concurrency: 1, variants: [], maxWaiting: 5)
        let first = prefetcher.start(urls: [h.url("/gate/p0.jpg")])
        await h.origin.waitForRequest("/gate/p0.jpg")  // running: it holds the one slot
        let batch = prefetcher.start(urls: (1..<20).map { h.url("/img/p\($0).jpg") })
        h.origin.openGate()
        let items = await batch.items
        let dropped = items.prefix(14).map { (try? $0.outcome.get()) == nil ? ($0.outcome.failureCode ?? nil) : nil }
        #expect(dropped == Array(repeating: .cancelled, count: 14), "the oldest 14 of 19 waiting are dropped")
        #expect(items.suffix(5).allSatisfy { (try? $0.outcome.get()) == .downloaded }, "the newest 5 ran")
        #expect(await first.summary.downloaded == 1)
        try await h.pipeline.close()
    }

    /// Events nobody reads are kept up to `eventBufferLimit`, the newest.
    @Test func unreadBatchEventsAreBounded() async throws {
        let h = try await LoopbackHarness()
        let count = PrefetchBatch.eventBufferLimit * 2
        // Invalid URLs fail at once, without the network.
        let batch = ImagePrefetcher(pipeline: h.pipeline, concurrency: 4).start(urls: (0..<count).map { "nope:\($0)" })
        #expect(await batch.summary.failed == count)
        var events = 0
        var last = 0
        for await case .item(_, _, let progress) in batch.events {
            events += 1
            last = progress.done
        }
        #expect(events == PrefetchBatch.eventBufferLimit)
        #expect(last == count, "the newest are kept")
        try await h.pipeline.close()
    }
}
