@testable import ArtCacheCore
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOEmbedded
import Testing

/// Final memory hits answered by their route (``ThumbnailService/HitRoute``):
/// the same answer as a lookup would give, for as long as the memory tier
/// holds the image and nothing better was kept before it.
@Suite("Service: memory hits by route", .timeLimit(.minutes(2)))
struct HitRouteTests {
    static let chrome: HTTPFields = [.accept: FormatPolicyTests.chrome]

    /// Keep-alive requests on one connection, as a browser sends them (the
    /// channel handlers answer memory hits; a request with
    /// `Connection: close`, as the test client's, goes to the router).
    struct Connection {
        let channel: NIOAsyncTestingChannel

        init(_ s: ServiceHarness) async throws { channel = try await RawHitHandlerTests.channel(s) }

        /// The memory hit's answer; nil when the request went on to the router.
        func get(_ path: String, accept: String = FormatPolicyTests.chrome, _ extra: String = "") async throws -> RawHitHandlerTests.Answer? {
            try await channel.writeInbound(ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: \(accept)\r\n\(extra)\r\n"))
            let answers = try await RawHitHandlerTests.answers(channel)
            #expect(answers.count <= 1)
            if answers.isEmpty { #expect(try await RawHitHandlerTests.passed(channel).count == 1, "not answered: went on") }
            return answers.first
        }

        func close() async { _ = try? await channel.finish() }
    }

    /// Everything but `Date`, which is the second's.
    static func withoutDate(_ answer: RawHitHandlerTests.Answer?) -> [String: String]? {
        answer.map { $0.headers.filter { $0.key != "date" } }
    }

    @Test func aRoutedHitIsTheLookupsAnswerAndCountsAsAHit() async throws {
        let (s, path, warm) = try await RawHitHandlerTests.warm()
        #expect(s.service.hitRoutes.count == 1, "the router's memory hit left its route")
        s.service.hitRoutes.remove(.init(path: path, accept: FormatPolicyTests.chrome, saveData: false))  // the next hit is looked up
        let connection = try await Connection(s)
        let looked = try #require(try await connection.get(path))
        #expect(s.service.hitRoutes.count == 1, "a final memory hit leaves its route")
        let hits = s.pipeline.memory.stats.hits
        let routed = try #require(try await connection.get(path))
        #expect(s.pipeline.memory.stats.hits == hits + 1, "a routed hit is counted (and marked used) in the memory tier")
        #expect(routed.body == warm.body && routed.headers["content-type"] == warm.type)
        #expect(Self.withoutDate(routed) == Self.withoutDate(looked), "the lookup's answer")
        // If-None-Match is answered from the route's ETag; another Accept is another route.
        let etag = try #require(routed.headers["etag"])
        let revalidated = try #require(try await connection.get(path, "If-None-Match: \(etag)\r\n"))
        #expect(revalidated.statusLine == "HTTP/1.1 304 Not Modified" && revalidated.body.isEmpty && revalidated.headers["etag"] == etag)
        try await s.app().test(.router) { client in _ = try await client.execute(uri: path, method: .get, headers: [.accept: "image/jpeg"]) }
        #expect(try await connection.get(path, accept: "image/jpeg")?.headers["content-type"] == "image/jpeg")
        #expect(s.service.hitRoutes.count == 2)
        await connection.close()
        try await s.close()
    }

    @Test func aRouteEndsWithItsImageInMemory() async throws {
        let (s, path, warm) = try await RawHitHandlerTests.warm()
        let connection = try await Connection(s)
        _ = try await connection.get(path)
        #expect(s.service.hitRoutes.count == 1)
        // Dropped from the tier (evicted, replaced, purged: the same removal).
        s.pipeline.memory.removeAll()
        #expect(try await connection.get(path) == nil, "not answered by the route of an image no longer kept")
        #expect(s.service.hitRoutes.count == 0, "and the route let go")
        await connection.close()
        try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: Self.chrome) { response in
                #expect(response.headers[.artcacheSource] == "disk" && Array(buffer: response.body) == warm.body)
            }
        }
        let again = try await Connection(s)
        #expect(try await again.get(path)?.headers["x-artcache-source"] == "memory", "back in memory")
        await again.close()
        try await s.close()
    }

    @Test func anExplicitBetterFormatDoesNotShadowARoutedColdOne() async throws {
        let s = try await ServiceUpgradeTests.harness(avif: .behind)
        s.origin.register("flat.png", .init(body: try Fixtures.image(width: 8, height: 8, suffix: ".png"), contentType: "image/png"))
        let path = try s.path("/img/flat.png", "16x16,fit=cover")
        let choice = ServiceUpgradeTests.chromeChoice(s, 16)
        let better = try #require(choice.better)
        try #require(better != choice.cold, "the table's better format at 16 px is another format")
        let cold = ServiceUpgradeTests.mime(choice.cold)
        try await s.app().test(.router) { client in
            _ = try await client.execute(uri: path, method: .get, headers: Self.chrome)
            await s.pipeline.waitForUpgrades()
            #expect(s.pipeline.upgradeCounts == UpgradeCounts(kept: 0, noGain: 1, failed: 0))
            // The cold answer left memory with its upgrade's end: from disk, into memory again.
            _ = try await client.execute(uri: path, method: .get, headers: Self.chrome)
        }
        let connection = try await Connection(s)
        for _ in 0..<2 {  // looked up (its route kept), then by the route
            #expect(try await connection.get(path)?.headers["content-type"] == cold)
        }
        #expect(s.service.hitRoutes.count == 1, "a cold answer that will not be upgraded is final")
        // The better format asked for by name (an explicit `f=`, at its cold
        // effort, after its upgrade gave no gain): stored, but not an upgrade's
        // bytes, so never the negotiated answer (issue 58); the route's cold answer stays.
        let forced = try s.path("/img/flat.png", "16x16,fit=cover,f=\(better.rawValue)")
        let type = ServiceUpgradeTests.mime(better)
        try await s.app().test(.router) { client in
            try await client.execute(uri: forced, method: .get, headers: Self.chrome) { response in
                #expect(response.headers[.contentType] == type)
            }
        }
        let answer = try await connection.get(path)
        #expect(answer?.headers["content-type"] == cold, "not shadowed by a variant no upgrade kept")
        await connection.close()
        try await s.close()
    }

    /// A cold answer whose row is open (its upgrade not run yet) is not
    /// final: each hit asks for the upgrade again (here the scheduler is
    /// closed, so it is never queued), and no route answers in its place.
    /// Nor is it a memory answer to a client that accepts the better format:
    /// the better one may be kept on disk (issue 49 item 3), so the index is asked.
    @Test func aColdAnswerWithItsUpgradeStillOpenLeavesNoRoute() async throws {
        let s = try await ServiceUpgradeTests.harness(avif: .behind, webp: .behind)
        s.origin.register("zone.jpg", .init(body: try Fixtures.image(width: 600, height: 600, suffix: ".jpg"), contentType: "image/jpeg"))
        let path = try s.path("/img/zone.jpg", "300x300,fit=cover")
        await s.pipeline.background.close()
        let cold = try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: Self.chrome)
        }
        #expect(cold.status == .ok && cold.headers[.contentType] == "image/jpeg")
        let parsed = try s.service.parse(path: path, accept: FormatPolicyTests.chrome)
        #expect(s.pipeline.cachedNegotiatedImage(parsed.request, better: parsed.better) == nil)
        #expect(s.pipeline.cachedNegotiatedImage(parsed.request, better: nil)?.response.entry?.upgrade == .open,
                "the cold bytes are in memory, their row open")
        let connection = try await Connection(s)
        for _ in 0..<2 {
            #expect(try await connection.get(path) == nil, "not answered from memory: on to the router, which asks the index")
        }
        #expect(s.service.hitRoutes.count == 0, "an open row: every hit is looked up")
        await connection.close()
        try await s.close()
    }

    /// Known answers of how long a kept answer stays exact: its `max-age`
    /// is the cap until the original has less than the cap left, then it
    /// counts down and the answer is the second's.
    @Test func aKeptAnswerIsExactUntilItsMaxAgeCountsDown() async throws {
        let (s, path, _) = try await RawHitHandlerTests.warm()
        let parsed = try s.service.parse(path: path, accept: FormatPolicyTests.chrome)
        let hit = try #require(s.pipeline.cachedNegotiatedImage(parsed.request, better: parsed.better))
        #expect(hit.ticket != nil && !hit.upgrading)
        let cap = s.service.settings.cacheMaxAge
        #expect(cap == 3600)
        let now = Date(timeIntervalSince1970: 1_800_000_000.25)
        func exactUntil(_ freshUntil: Date?) -> Date? {
            let image = ImageResponse(data: hit.response.data, contentType: hit.response.contentType, width: hit.response.width,
                                      height: hit.response.height, source: .memory, cacheKey: hit.response.cacheKey,
                                      entry: hit.response.entry, freshUntil: freshUntil)
            return s.service.kept(image, negotiated: true, signed: parsed.signed, lifetime: .final, now: now)?.exactUntil
        }
        #expect(exactUntil(nil) == .distantFuture)
        #expect(exactUntil(now.addingTimeInterval(cap + 100)) == now.addingTimeInterval(100))
        #expect(exactUntil(now.addingTimeInterval(10)) == Date(timeIntervalSince1970: 1_800_000_001))
        try await s.close()
    }
}
