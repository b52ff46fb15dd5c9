@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
@testable import ArtCacheStore
import Foundation
import Hummingbird
import Testing

/// The cache's `hits` and `misses` count requests, not lookups; and the
/// memory tier serves an image only while its original is fresh.
@Suite("Request counting and memory freshness", .timeLimit(.minutes(3)))
struct RequestCountingTests {
    /// A cold thumbnail is one miss (it looks up the variant, then the
    /// original: that was two; through the service, a cache-only probe
    /// and a network pass: four). The same request from disk is one hit.
    @Test func aColdThumbnailIsOneMissThroughTheLibrary() async throws {
        let h = try await LoopbackHarness { $0.memory.maxEntries = 0 }
        h.origin.register("a.jpg", .init(body: try Fixtures.image(width: 200, height: 150, suffix: ".jpg"), contentType: "image/jpeg",
                                         cacheControl: "max-age=3600"))
        let request = ImageRequest(url: h.url("/img/a.jpg"), width: 50, height: 50)
        _ = try await h.pipeline.image(request)
        var stats = try await h.store.stats()
        #expect((stats.hits, stats.misses) == (0, 1))
        #expect(try await h.pipeline.image(request).source == .disk)
        stats = try await h.store.stats()
        #expect((stats.hits, stats.misses) == (1, 1))
        // Another size of a cached original: rendered, so a miss of its own.
        _ = try await h.pipeline.image(ImageRequest(url: h.url("/img/a.jpg"), width: 20, height: 20))
        stats = try await h.store.stats()
        #expect((stats.hits, stats.misses) == (1, 2))
        try await h.pipeline.close()
    }

    @Test func aColdThumbnailIsOneMissThroughTheService() async throws {
        let s = try await ServiceHarness(live: true) { $0.memory.maxEntries = 0 }
        try s.register("a.jpg", width: 200, height: 150)
        let path = try s.path("/img/a.jpg", "50x50")
        try await s.app().test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            #expect(try await HTTPGet.get(base + path).status == 200)
            var stats = try await s.pipeline.store.stats()
            #expect((stats.hits, stats.misses) == (0, 1))
            #expect(try await HTTPGet.get(base + path).status == 200)  // from disk: the probe answers
            stats = try await s.pipeline.store.stats()
            #expect((stats.hits, stats.misses) == (1, 1))
        }
        try await s.close()
    }

    /// A memory hit whose original has expired is not served as is: the
    /// request goes to the disk tier, which revalidates (one 304), as a disk
    /// hit does. Variants follow their original's freshness.
    @Test(arguments: [nil, 50] as [Int?])
    func anExpiredMemoryHitRevalidates(size: Int?) async throws {
        let h = try await LoopbackHarness { $0.cache.staleWhileRevalidate = 0 }  // waits for the 304
        h.origin.register("a.jpg", .init(body: try Fixtures.image(width: 200, height: 150, suffix: ".jpg"), contentType: "image/jpeg",
                                         cacheControl: "max-age=0", etag: "\"v1\""))
        let request = ImageRequest(url: h.url("/img/a.jpg"), size: size.map { ImageRequest.Size($0) })
        #expect(try await h.pipeline.image(request).source == .network)
        #expect(h.pipeline.cachedImage(for: request) == nil, "expired: not served from memory")
        let second = try await h.pipeline.image(request)
        #expect(second.source == .revalidated)
        #expect(h.origin.notModifiedCount == 1)
        #expect(second.rendered == false, "a 304 keeps the stored variant")
        try await h.pipeline.close()
    }

    /// A fresh memory hit is served without the disk or the network.
    @Test func aFreshMemoryHitIsServed() async throws {
        let h = try await LoopbackHarness()
        h.origin.register("a.jpg", .init(body: try Fixtures.image(width: 200, height: 150, suffix: ".jpg"), contentType: "image/jpeg",
                                         cacheControl: "max-age=3600"))
        let request = ImageRequest(url: h.url("/img/a.jpg"), width: 50, height: 50)
        _ = try await h.pipeline.image(request)
        #expect(h.pipeline.cachedImage(for: request)?.source == .memory)
        #expect(try await h.pipeline.image(request).source == .memory)
        #expect(h.origin.totalRequests == 1)
        try await h.pipeline.close()
    }
}
