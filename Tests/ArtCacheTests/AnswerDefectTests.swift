import ArtCacheFixtures
@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
@testable import ArtCacheStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Testing

/// Issue 58's defects, each at the level a user meets it (the CLI, or HTTP
/// against the service): sources the world sends (tagged, palette-like
/// opaque GIFs, undersized renditions) and second paths (a restart, an
/// explicit format asked first).
@Suite("Issue 58: the right bytes and headers", .timeLimit(.minutes(3)))
struct AnswerDefectTests {
    static let chrome = FormatPolicyTests.chrome

    // MARK: ICC profiles

    /// `artcache thumb --format webp` of a Display P3 JPEG: converted to
    /// sRGB and untagged (it carried lcms' 7 KB sRGB profile: 9,180 B
    /// against 2,248 B for the same photo untagged).
    @Test func theCLIsThumbnailOfATaggedPhotoCarriesNoProfile() async throws {
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let p3 = try SyntheticImage.tagged(.p3, width: 600, height: 400)
        origin.register("p3.jpg", .init(body: p3, contentType: "image/jpeg"))
        let dir = TempDir()
        let out = dir.path + "/thumb.webp"
        let run = try await CLI.run(["thumb", origin.url("/img/p3.jpg"), "--size", "100x100", "--format", "webp", "-o", out,
                                     "--cache-dir", dir.path + "/cache"])
        #expect(run.status == 0, "\(run.stderr)")
        let webp = try Data(contentsOf: URL(fileURLWithPath: out))
        #expect(!Self.hasICCChunk(webp), "no ICCP chunk: \(webp.count) B")
        #expect(Fixtures.header(webp)?.hasICCProfile == false)
        #expect(webp.count < 4000, "\(webp.count) B for a 100 px WebP")
    }

    /// Every output format, from every kind of tagged source, on both
    /// render paths (libvips; the TurboJPEG fast path for an sRGB-tagged
    /// JPEG): no ICC profile in the output.
    @Test(arguments: [VariantSpec.Format.jpeg, .webp, .png, .avif])
    func noOutputCarriesAProfile(format: VariantSpec.Format) async throws {
        let renderer = Renderer(settings: ThumbnailSettings())
        let sources: [(String, Data)] = [
            ("P3 JPEG", try SyntheticImage.tagged(.p3)),
            ("Adobe RGB JPEG", try SyntheticImage.tagged(.adobe)),
            ("sRGB-tagged JPEG (fast path)", try SyntheticImage.tagged(.srgb)),
            ("P3 PNG with alpha", try SyntheticImage.tagged(.p3, alpha: true, suffix: ".png")),
        ]
        for (what, source) in sources {
            #expect(Fixtures.header(source)?.hasICCProfile == true, "\(what): the source is tagged")
            for spec in [VariantSpec(width: 100, height: 100, fit: .cover, format: format, quality: 80),
                         VariantSpec(width: 64, height: 64, fit: .smart, format: format, quality: 80)] {
                let image = try await renderer.render(source, spec: spec)
                #expect(Fixtures.header(image.data)?.hasICCProfile == false, "\(what) → \(spec.canonical)")
            }
        }
    }

    /// Through the service, Chrome's cold answer for a P3 photo and a JPEG
    /// client's carry no profile either.
    @Test func theServicesAnswersForATaggedPhotoCarryNoProfile() async throws {
        let s = try await ServiceHarness()
        s.origin.register("p3.jpg", .init(body: try SyntheticImage.tagged(.p3, width: 600, height: 400), contentType: "image/jpeg"))
        let path = try s.path("/img/p3.jpg", "100x100,fit=cover")
        try await s.app().test(.router) { client in
            for accept in [Self.chrome, "image/jpeg"] {
                try await client.execute(uri: path, method: .get, headers: [.accept: accept]) { response in
                    let body = Data(buffer: response.body)
                    #expect(response.status == .ok)
                    #expect(Fixtures.header(body)?.hasICCProfile == false, "\(accept): \(response.headers[.contentType] ?? "")")
                }
            }
        }
        try await s.close()
    }

    /// A WebP's RIFF chunks include `ICCP`.
    static func hasICCChunk(_ webp: Data) -> Bool {
        let bytes = [UInt8](webp)
        guard bytes.count >= 12 else { return false }
        var at = 12
        while at + 8 <= bytes.count {
            let size = Int(bytes[at + 4]) | Int(bytes[at + 5]) << 8 | Int(bytes[at + 6]) << 16 | Int(bytes[at + 7]) << 24
            if bytes[at..<at + 4].elementsEqual("ICCP".utf8) { return true }
            at += 8 + size + (size & 1)
        }
        return false
    }

    // MARK: Opaque alpha

    /// A 4-frame GIF without a transparent pixel, asked by a JPEG client:
    /// a JPEG (libvips loads every GIF as RGBA; opaque alpha is not alpha).
    @Test func anOpaqueGIFAnswersAJPEGClientInJPEG() async throws {
        let gif = try SyntheticImage.animatedGIF(width: 200, height: 160, frames: 4)
        #expect(Fixtures.header(gif)?.hasAlpha == true, "the premise: libvips reads the GIF as RGBA")
        let s = try await ServiceHarness()
        s.origin.register("opaque.gif", .init(body: gif, contentType: "image/gif"))
        let path = try s.path("/img/opaque.gif", "100x100,fit=cover")
        try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: [.accept: "image/jpeg"]) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/jpeg")
            }
        }
        try await s.close()
    }

    /// The renderer's `auto`: JPEG for an opaque GIF or RGBA PNG, PNG where
    /// a pixel is transparent; an explicit PNG of an opaque source has no alpha.
    @Test func opaqueAlphaIsDroppedBeforeTheFormatIsChosen() async throws {
        let renderer = Renderer(settings: ThumbnailSettings())
        let auto = VariantSpec(width: 50, height: 50, fit: .cover, format: .auto, quality: 80)
        let gif = try await renderer.render(try SyntheticImage.animatedGIF(width: 120, height: 90, frames: 3), spec: auto)
        #expect(gif.format == .jpeg && !gif.hasAlpha)
        let opaquePNG = try SyntheticImage.tagged(.none, alpha: true, suffix: ".png")
        #expect(Fixtures.header(opaquePNG)?.hasAlpha == true)
        #expect(try await renderer.render(opaquePNG, spec: auto).format == .jpeg)
        let translucent = try Fixtures.image(width: 120, height: 90, bands: 4, suffix: ".png")
        let kept = try await renderer.render(translucent, spec: auto)
        #expect(kept.format == .png && kept.hasAlpha, "real alpha stays")
        var png = auto
        png.format = .png
        let explicit = try await renderer.render(opaquePNG, spec: png)
        #expect(explicit.format == .png && Fixtures.header(explicit.data)?.hasAlpha == false)
    }

    // MARK: Undersized answers

    /// With a provider profile, a 120 px request whose larger rendition
    /// fails on the network is answered from the 60 px original, and kept
    /// nowhere: `Cache-Control: no-store` (it said `public, max-age=86397`),
    /// never a 304, and the next request tries the larger rendition again.
    @Test func anUndersizedAnswerIsNotKeptDownstream() async throws {
        let s = try await ServiceHarness { configuration in
            try! configuration.profiles.set("loopback", line: "hosts=127.0.0.1 path=/img/ size=dimensions max=1000")
            configuration.download.retries = 0
        }
        s.origin.register("d60x60bb.jpg", .init(body: try Fixtures.image(width: 60, height: 60, suffix: ".jpg"),
                                                contentType: "image/jpeg", cacheControl: "max-age=3600"))
        // The larger rendition's transfer breaks (half its body, then the connection closes): a network failure.
        var broken = OriginServer.Resource(body: try Fixtures.image(width: 120, height: 120, suffix: ".jpg"), contentType: "image/jpeg",
                                           cacheControl: "max-age=3600")
        broken.cutShort = true
        s.origin.register("d120x120bb.jpg", broken)
        let small = try s.path("/img/d60x60bb.jpg", "60x60")
        let large = try s.path("/img/d60x60bb.jpg", "120x120")
        try await s.app().test(.router) { client in
            var keptTag: String?
            try await client.execute(uri: small, method: .get, headers: [.accept: "image/jpeg"]) { response in
                #expect(response.status == .ok && response.headers[.cacheControl]?.hasPrefix("public") == true)
                keptTag = response.headers[.eTag]
            }
            await s.harness.store.waitForWritesBehind()
            var undersizedTag: String?
            for round in 1...2 {
                try await client.execute(uri: large, method: .get,
                                         headers: [.accept: "image/jpeg", .ifNoneMatch: keptTag ?? "\"none\""]) { response in
                    #expect(response.status == .ok, "round \(round): never a 304")
                    #expect(response.headers[.cacheControl] == "no-store", "round \(round)")
                    #expect(response.headers[.artcacheNotKept] == "undersized", "round \(round)")
                    #expect(Fixtures.header(Data(buffer: response.body))?.width == 60)
                    undersizedTag = response.headers[.eTag]
                }
            }
            // (The same bytes as the 60 px answer here, so the same ETag: still a 200, never its 304.)
            #expect(undersizedTag != nil)
            #expect(s.origin.requestCount("/img/d120x120bb.jpg") == 2, "each request tried the larger rendition")
        }
        try await s.close()
    }

    // MARK: Animated sources after a restart

    /// The fact "animated" is the index's: after a restart (an empty memo),
    /// Chrome's request for a stored animated GIF is answered animated, and
    /// no `format_upgrade` runs behind it (one ran, and could keep a still AVIF).
    @Test(arguments: [false, true])
    func anAnimatedSourceStaysAnimatedAfterARestart(webp: Bool) async throws {
        let s = try await ServiceHarness()
        s.origin.register("anim", .init(body: try SyntheticImage.animation(width: 200, height: 200, delays: [100, 200, 300], webp: webp),
                                        contentType: webp ? "image/webp" : "image/gif"))
        let path = try s.path("/img/anim", "100x100,fit=cover")
        try await s.app().test(.router) { client in
            let cold = try await ServiceAnimationTests.get(client, path, accept: Self.chrome)
            #expect(cold.type == "image/webp" && cold.animation != nil)
        }
        await s.pipeline.waitForUpgrades()
        await s.harness.store.waitForWritesBehind()
        try await s.close()
        let (pipeline, service) = try await s.restarted()
        try await buildApplication(service: service).test(.router) { client in
            for round in 1...3 {  // disk, then memory
                let answer = try await ServiceAnimationTests.get(client, path, accept: Self.chrome)
                #expect(answer.type == "image/webp" && answer.animation != nil, "round \(round)")
                await pipeline.waitForUpgrades()
            }
        }
        #expect((pipeline.background.counts[.formatUpgrade]?.finished ?? 0) == 0, "no upgrade was queued")
        #expect(pipeline.upgradeCounts == UpgradeCounts())
        #expect(s.origin.requestCount("/img/anim") == 1)
        try await pipeline.close()
    }

    // MARK: An explicit format is not an upgrade

    /// An AVIF stored by an explicit `f=avif` URL (cold effort) is not the
    /// negotiated request's better answer: Chrome gets the cold WebP and its
    /// upgrade is queued, whose outcome decides.
    @Test func anExplicitAVIFIsNotTakenForAnUpgrade() async throws {
        let s = try await ServiceHarness()
        s.origin.register("zone.jpg", .init(body: try SyntheticImage.zonePlateJPEG(width: 600, height: 600, quality: 90),
                                            contentType: "image/jpeg"))
        let choice = ServiceUpgradeTests.chromeChoice(s, 100)
        try #require(choice.cold == .webp && choice.better == .avif, "the premise: WebP cold, AVIF behind at 100 px")
        let explicit = try s.path("/img/zone.jpg", "100x100,fit=cover,f=avif")
        let negotiated = try s.path("/img/zone.jpg", "100x100,fit=cover")
        try await s.app().test(.router) { client in
            var explicitBytes = Data()
            try await client.execute(uri: explicit, method: .get) { response in
                #expect(response.headers[.contentType] == "image/avif")
                explicitBytes = Data(buffer: response.body)
            }
            await s.harness.store.waitForWritesBehind()
            try await client.execute(uri: negotiated, method: .get, headers: [.accept: Self.chrome]) { response in
                #expect(response.headers[.contentType] == "image/webp", "the cold answer, not the explicit AVIF")
                #expect(ServiceUpgradeTests.maxAge(response).map { $0 <= 60 } == true, "an upgrade is behind it")
            }
            await s.pipeline.waitForUpgrades()
            #expect(s.pipeline.upgradeCounts.kept + s.pipeline.upgradeCounts.noGain == 1, "the upgrade ran: \(s.pipeline.upgradeCounts)")
            try await client.execute(uri: negotiated, method: .get, headers: [.accept: Self.chrome]) { response in
                let body = Data(buffer: response.body)
                if s.pipeline.upgradeCounts.kept == 1 {
                    #expect(response.headers[.contentType] == "image/avif" && body != explicitBytes, "the upgrade's own bytes")
                } else {
                    #expect(response.headers[.contentType] == "image/webp")
                }
                #expect(ServiceUpgradeTests.maxAge(response).map { $0 > 60 } == true, "final")
            }
        }
        try await s.close()
    }
}
