import ArtCacheFixtures
@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
import ArtCacheResultSets
@testable import ArtCacheServer
import Foundation
import HTTPTypes
import Hummingbird
import Testing

/// Issue 52 §1 through the service: an animated avatar (GIF or WebP) stays
/// animated for a client that takes WebP — whatever the format policy's
/// cold answer at that size (AVIF from 300 px for Chrome) — with nothing
/// upgraded behind it; a JPEG client gets the first frame; past the frame
/// limits a WebP client gets the first frame and `X-ArtCache-Still: frames`.
@Suite("Service: animated sources", .timeLimit(.minutes(3)))
struct ServiceAnimationTests {
    static let delays = [100, 250, 400]

    struct Answer {
        var type: String?
        var still: String?
        var source: String?
        var body: Data
        var animation: AnimationTests.WebPAnimation? { AnimationTests.webpAnimation(body) }
    }

    static func get(_ client: TestClient, _ path: String, accept: String) async throws -> Answer {
        try await client.execute(uri: path, method: .get, headers: [.accept: accept]) { response in
            #expect(response.status == .ok, "\(path)")
            return Answer(type: response.headers[.contentType], still: response.headers[.artcacheStill],
                          source: response.headers[.artcacheSource], body: Data(buffer: response.body))
        }
    }

    @Test(arguments: [(false, 100), (false, 300), (true, 300)])
    func chromeGetsAnAnimatedWebPAtEverySize(webp: Bool, side: Int) async throws {
        let s = try await ServiceHarness()
        s.origin.register("a", .init(body: try SyntheticImage.animation(width: 480, height: 320, delays: Self.delays, webp: webp),
                                     contentType: webp ? "image/webp" : "image/gif"))
        let path = try s.path("/img/a", "\(side)x\(side),fit=cover")
        #expect(ServiceUpgradeTests.chromeChoice(s, side).cold != .webp || side == 100, "the policy alone would not answer WebP at \(side) px")
        try await s.app().test(.router) { client in
            let cold = try await Self.get(client, path, accept: FormatPolicyTests.chrome)
            #expect(cold.type == "image/webp" && cold.still == nil && cold.source == "network")
            let animation = try #require(cold.animation, "animated")
            #expect(animation.durations == Self.delays, "\(animation)")
            #expect(animation.width == side && animation.height == side, "\(animation)")
            // Nothing behind it replaces it with a still.
            await s.pipeline.waitForUpgrades()
            let again = try await Self.get(client, path, accept: FormatPolicyTests.chrome)
            #expect(again.body == cold.body && again.source == "memory")
            // A JPEG client: the first frame (PNG: a GIF decodes with alpha).
            let jpeg = try await Self.get(client, path, accept: "image/jpeg")
            #expect(["image/jpeg", "image/png"].contains(jpeg.type) && Fixtures.header(jpeg.body)?.frames == 1, "\(jpeg.type ?? "")")
        }
        #expect(s.origin.requestCount("/img/a") == 1)
        try await s.close()
    }

    /// Past `max_frames`: Chrome gets the first frame as a WebP, and says
    /// why — again when it is read from disk (no memory tier here).
    @Test func pastTheFrameLimitAStillThatSaysSo() async throws {
        let s = try await ServiceHarness {
            $0.thumbnails.maxFrames = 2
            $0.memory.maxEntries = 0
        }
        s.origin.register("b.gif", .init(body: try SyntheticImage.animation(width: 200, height: 200, delays: Self.delays, webp: false),
                                         contentType: "image/gif"))
        let path = try s.path("/img/b.gif", "100x100,fit=cover")
        try await s.app().test(.router) { client in
            let answer = try await Self.get(client, path, accept: FormatPolicyTests.chrome)
            #expect(answer.type == "image/webp" && answer.animation == nil && answer.still == "frames")
            #expect(Fixtures.header(answer.body)?.frames == 1)
            await s.harness.store.waitForWritesBehind()
            let stored = try await Self.get(client, path, accept: FormatPolicyTests.chrome)
            #expect(stored.source == "disk" && stored.body == answer.body && stored.still == "frames")
        }
        try await s.close()
    }

    /// `/v1/info` and a manifest say so: `animated`, `frames` (computed with
    /// the placeholder from the header, kept in the index: read back after
    /// the pipeline is opened again on the same cache).
    @Test func infoAndManifestsSayAnimatedAndFrames() async throws {
        let s = try await ServiceHarness()
        s.origin.register("d.gif", .init(body: try SyntheticImage.animation(width: 120, height: 90, delays: Self.delays, webp: false),
                                         contentType: "image/gif"))
        let url = s.origin.url("/img/d.gif")
        try await s.app().test(.router) { client in
            try await client.execute(uri: s.signer.infoPath(for: url), method: .get) { response in
                #expect(response.status == .ok)
                let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                #expect(object?["animated"] as? Bool == true && object?["frames"] as? Int == 3, "\(object ?? [:])")
                #expect(object?["width"] as? Int == 120 && object?["height"] as? Int == 90, "one frame's size")
            }
        }
        await s.harness.store.waitForWritesBehind()
        let stored = try await s.pipeline.info(for: url, options: .cacheOnly)
        #expect(stored.animated && stored.frames == 3)
        let manifest = try await s.pipeline.manifest(for: ResultSet(format: .urls, urls: [url]), sizes: [ImageSize(100)], fit: .cover)
        #expect(manifest.items.first?.animated == true && manifest.items.first?.frames == 3)
        try await s.close()
    }

    /// A still source is negotiated as before (AVIF for Chrome at 300 px).
    @Test func stillSourcesAreNegotiatedAsBefore() async throws {
        let s = try await ServiceHarness()
        try s.register("c.jpg", width: 600, height: 600)
        let path = try s.path("/img/c.jpg", "300x300,fit=cover")
        let expected = ServiceUpgradeTests.mime(ServiceUpgradeTests.chromeChoice(s, 300).cold)
        try await s.app().test(.router) { client in
            let answer = try await Self.get(client, path, accept: FormatPolicyTests.chrome)
            #expect(answer.type == expected && answer.still == nil)
        }
        try await s.close()
    }
}
