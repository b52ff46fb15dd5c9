@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheStore
import Foundation
import Testing

/// Issue 36: freshness by RFC 9111, through the pipeline and the loopback
/// origin. No clock is waited on: the origin's headers and the rows' store
/// times are set in the past instead.
@Suite("Freshness by RFC 9111", .timeLimit(.minutes(3)))
struct FreshnessRFCTests {
    static let jpeg = FreshnessTests.jpeg
    static let day: TimeInterval = 86400

    /// Age, s-maxage, private and heuristic freshness decide the stored
    /// expiry (relative to the store time: exact, whatever the clock does).
    @Test func theOriginsHeadersDecideTheExpiry() async throws {
        let h = try await FreshnessTests.harness { $0.cache.defaultTTL = 3600; $0.cache.heuristicMax = 7 * Self.day }
        let lastModified = HTTPDate.format(Date().addingTimeInterval(-10 * Self.day))
        let resources: [String: OriginServer.Resource] = [
            "cdn.jpg": .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=60", headers: ["Age": "58"]),
            "shared.jpg": .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=60, s-maxage=600"),
            "plain.jpg": .init(body: Self.jpeg, contentType: "image/jpeg"),
            "dated.jpg": .init(body: Self.jpeg, contentType: "image/jpeg", headers: ["Last-Modified": lastModified]),
            "private.jpg": .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "private, max-age=600"),
        ]
        for (name, resource) in resources {
            h.origin.register(name, resource)
            #expect(try await h.pipeline.original(h.url("/img/" + name)).source == (name == "private.jpg" ? .uncacheable : .downloaded))
        }
        func lifetime(_ name: String) async throws -> TimeInterval? {
            let entry = try await h.store.entry(forURL: h.url("/img/" + name))
            return entry.flatMap { entry in entry.expiresAt.map { $0.timeIntervalSince(entry.createdAt) } }
        }
        #expect(try await lifetime("cdn.jpg") == 2, "max-age=60 with Age: 58")
        #expect(try await lifetime("shared.jpg") == 600, "s-maxage wins")
        #expect(try await lifetime("plain.jpg") == 3600, "default_ttl, not fresh for ever")
        let dated = try #require(try await lifetime("dated.jpg"))
        // 10% of ten days, plus a tenth of however long the run took to reach the origin (its Date).
        #expect(dated >= Self.day && dated < Self.day + 60, "10% of ten days: \(dated)")
        #expect(try await h.store.entry(forURL: h.url("/img/private.jpg")) == nil, "private: not stored for sharing")
        // Asked again: the private one is downloaded again, the others are not.
        for name in resources.keys { _ = try await h.pipeline.original(h.url("/img/" + name)) }
        #expect(h.origin.requestCount("/img/private.jpg") == 2)
        #expect(h.origin.requestCount("/img/shared.jpg") == 1)
        #expect(h.origin.requestCount("/img/plain.jpg") == 1)
        try await h.pipeline.close()
    }

    /// `a.jpg` stored already expired (`max-age=0`, an ETag) with one
    /// 40x40 variant, stale-while-revalidate off: the next request revalidates first.
    static func storedExpiredWithAVariant() async throws -> (LoopbackHarness, String) {
        let h = try await FreshnessTests.harness { $0.cache.staleWhileRevalidate = 0 }
        h.origin.register("a.jpg", .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"v1\""))
        let url = h.url("/img/a.jpg")
        _ = try await h.pipeline.image(ImageRequest(url: url))
        _ = try await h.pipeline.image(ImageRequest(url: url, width: 40, height: 40))
        await h.store.waitForWritesBehind()
        let before = try await h.store.stats()
        #expect(before.originals == 1 && before.variants == 1)
        return (h, url)
    }

    /// A revalidation answered 404 or 410 removes the original and its
    /// variants (else they are served stale again), and the answer is
    /// remembered for negative_ttl.
    @Test(arguments: [404, 410])
    func aRevalidationAnsweredGoneRemovesTheEntryAndItsVariants(status: Int) async throws {
        let (h, url) = try await Self.storedExpiredWithAVariant()
        h.origin.register("a.jpg", .init(body: Data(), contentType: nil, status: status))
        let error = await #expect(throws: ArtCacheError.self) {
            try await h.pipeline.image(ImageRequest(url: url, width: 40, height: 40))
        }
        #expect(error?.code == .httpStatus(status))
        let after = try await h.store.stats()
        #expect(after.originals == 0 && after.variants == 0, "\(after.originals) originals, \(after.variants) variants")
        #expect(after.freshness.negative == 1)
        let again = await #expect(throws: ArtCacheError.self) { try await h.pipeline.image(ImageRequest(url: url)) }
        #expect(again?.code == .httpStatus(status))
        #expect(again?.message.contains("remembered") == true, "\(String(describing: again))")
        #expect(h.origin.requestCount("/img/a.jpg") == 3, "download, thumbnail's revalidation (304), the gone answer")
        try await h.pipeline.close()
    }

    /// A revalidation answered 200 with `no-store` (or `private`): the new
    /// bytes are served to that request and not kept, and the copy stored
    /// before goes with its variants — else it is served stale again in
    /// place of what the origin now answers.
    @Test(arguments: ["no-store", "private, max-age=600"])
    func aRevalidationAnsweredUncacheableRemovesTheStoredCopy(cacheControl: String) async throws {
        let (h, url) = try await Self.storedExpiredWithAVariant()
        let changed = try Fixtures.image(width: 30, height: 20, suffix: ".jpg")
        h.origin.register("a.jpg", .init(body: changed, contentType: "image/jpeg", cacheControl: cacheControl, etag: "\"v2\""))
        let answer = try await h.pipeline.image(ImageRequest(url: url))
        #expect(answer.source == .network && answer.data == changed, "the origin's new answer, \(answer.source)")
        await h.store.waitForWritesBehind()
        let after = try await h.store.stats()
        #expect(after.originals == 0 && after.variants == 0, "\(after.originals) originals, \(after.variants) variants")
        // The next request asks the origin again (nothing stored to serve).
        let next = try await h.pipeline.image(ImageRequest(url: url))
        #expect(next.data == changed)
        #expect(h.origin.requestCount("/img/a.jpg") == 4, "download, thumbnail's revalidation, two uncacheable answers")
        try await h.pipeline.close()
    }

    /// With negative_ttl = 0 and the default stale-while-revalidate window,
    /// a gone image is answered stale once (its revalidation runs behind),
    /// then never again.
    @Test func aGoneImageIsNotServedStaleAgainWithoutNegativeCaching() async throws {
        let h = try await FreshnessTests.harness { $0.download.negativeTTL = 0 }
        h.origin.register("a.jpg", .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"v1\""))
        let url = h.url("/img/a.jpg")
        #expect(try await h.pipeline.image(ImageRequest(url: url)).source == .network)
        await h.store.waitForWritesBehind()
        h.origin.register("a.jpg", .init(body: Data(), contentType: nil, status: 404))
        #expect(try await h.pipeline.image(ImageRequest(url: url)).source == .stale)
        await h.pipeline.waitForRevalidations()
        #expect(try await h.store.entry(forURL: url) == nil)
        let error = await #expect(throws: ArtCacheError.self) { try await h.pipeline.image(ImageRequest(url: url)) }
        #expect(error?.code == .httpStatus(404))
        #expect(h.origin.requestCount("/img/a.jpg") == 3)
        try await h.pipeline.close()
    }

    /// Rows stored before heuristic freshness (no expiry: fresh for ever)
    /// get one when read, from their Last-Modified and store time.
    @Test func rowsStoredWithoutAnExpiryGetOneWhenRead() async throws {
        let h = try await FreshnessTests.harness {
            $0.cache.staleWhileRevalidate = 0
            $0.cache.heuristicMax = 7 * Self.day
            $0.cache.defaultTTL = 3600
        }
        let now = Date()
        func stored(_ name: String, lastModified: TimeInterval?, storedAgo: TimeInterval) async throws -> CacheEntry {
            h.origin.register(name, .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=600", etag: "\"v1\""))
            let validators = HTTPValidators(etag: "\"v1\"", lastModified: lastModified.map { HTTPDate.format(now.addingTimeInterval($0)) })
            return try await h.store.put(url: h.url("/img/" + name), data: Self.jpeg, contentType: "image/jpeg",
                                         validators: validators, now: now.addingTimeInterval(-storedAgo))
        }
        // 10% of 10 days = 1 day from its store time 2 days ago: expired.
        let old = try await stored("old.jpg", lastModified: -12 * Self.day, storedAgo: 2 * Self.day)
        // 1 day from an hour ago: fresh.
        let recent = try await stored("recent.jpg", lastModified: -3600 - 10 * Self.day, storedAgo: 3600)
        // No Last-Modified: default_ttl (an hour) from 2 hours ago: expired.
        let bare = try await stored("bare.jpg", lastModified: nil, storedAgo: 7200)
        #expect(old.expiresAt == nil && recent.expiresAt == nil && bare.expiresAt == nil)

        #expect(try await h.pipeline.image(ImageRequest(url: h.url("/img/old.jpg"))).source == .revalidated)
        #expect(try await h.pipeline.image(ImageRequest(url: h.url("/img/bare.jpg"))).source == .revalidated)
        #expect(try await h.pipeline.image(ImageRequest(url: h.url("/img/recent.jpg"))).source == .disk)
        #expect(h.origin.notModifiedCount == 2)
        #expect(h.origin.requestCount("/img/recent.jpg") == 0)
        // The one still fresh has its expiry written: 1 day after its store time.
        let dated = try #require(try await h.store.entry(forURL: h.url("/img/recent.jpg")))
        let lifetime = try #require(dated.expiresAt).timeIntervalSince(dated.createdAt)
        #expect(lifetime >= Self.day && lifetime < Self.day + 1, "\(lifetime)")
        #expect(try await h.store.entry(forURL: h.url("/img/old.jpg"))?.freshFor == 600, "the 304's max-age")
        try await h.pipeline.close()
    }

    /// A 404's own Cache-Control decides how long it is remembered, capped
    /// by negative_ttl; no-store or max-age=0 is not remembered.
    @Test func aRemembered404KeepsItsOwnMaxAgeCappedByNegativeTTL() async throws {
        let h = try await FreshnessTests.harness { $0.download.negativeTTL = 600 }
        let rules: [String: String?] = ["short.jpg": "max-age=60", "long.jpg": "max-age=86400", "zero.jpg": "max-age=0",
                                        "never.jpg": "no-store", "plain.jpg": nil]
        for (name, cacheControl) in rules {
            h.origin.register(name, .init(body: Data(), contentType: nil, cacheControl: cacheControl, status: 404))
            for _ in 0..<2 { #expect(await h.error(ImageRequest(url: h.url("/img/" + name)))?.code == .httpStatus(404), "\(name)") }
        }
        func remembered(_ name: String) async throws -> TimeInterval? {
            let answer = try await h.store.negatives.answer(forKey: NormalizedURL(h.url("/img/" + name)).key)
            return answer.map { $0.until.timeIntervalSince($0.failedAt) }
        }
        #expect(try await remembered("short.jpg") == 60)
        #expect(try await remembered("long.jpg") == 600, "capped by negative_ttl")
        #expect(try await remembered("plain.jpg") == 600)
        #expect(try await remembered("zero.jpg") == nil)
        #expect(try await remembered("never.jpg") == nil)
        for (name, asked) in ["short.jpg": 1, "long.jpg": 1, "plain.jpg": 1, "zero.jpg": 2, "never.jpg": 2] {
            #expect(h.origin.requestCount("/img/" + name) == asked, "\(name)")
        }
        try await h.pipeline.close()
    }
}
