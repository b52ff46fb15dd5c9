@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
@testable import ArtCacheServiceGrammar
@testable import ArtCacheStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Testing

/// Format upgrades behind cold answers (docs/formats.md), with
/// real encoders and the calibrated table: `[service] avif = "behind"` and
/// `webp = "behind"` (at its cold effort WebP is the smaller cold answer at
/// 300 px since issue 51) make JPEG the cold answer for Chrome and AVIF the
/// better one; by default a tiny thumbnail is answered cold (WebP method 4
/// below 150 px) and tried again as AVIF at the slower effort behind it.
@Suite("Service: format upgrades", .timeLimit(.minutes(2)))
struct ServiceUpgradeTests {
    static let chrome: HTTPFields = [.accept: FormatPolicyTests.chrome]

    static func maxAge(_ response: TestResponse) -> Int? {
        guard let value = response.headers[.cacheControl], let range = value.range(of: "max-age=") else { return nil }
        return Int(value[range.upperBound...].prefix { $0.isNumber })
    }

    /// The content type of a cold choice (`auto`: a JPEG for these opaque sources).
    static func mime(_ format: VariantSpec.Format) -> String {
        switch format {
        case .auto, .jpeg: "image/jpeg"
        case .webp: "image/webp"
        case .avif: "image/avif"
        case .png: "image/png"
        case .jxl: "image/jxl"
        }
    }

    /// What the service's policy answers Chrome with at `side` px.
    static func chromeChoice(_ s: ServiceHarness, _ side: Int) -> FormatPolicy.Choice {
        s.service.formats.choice(s.service.accepts.accepted(FormatPolicyTests.chrome), size: ImageSize(side))
    }

    /// `webp = .behind` with `avif = .behind`: JPEG is Chrome's cold answer at every size.
    static func harness(avif: ServiceSettings.FormatUse = .behind,
                        webp: ServiceSettings.FormatUse = .cold) async throws -> ServiceHarness {
        let s = try await ServiceHarness {
            $0.service.avif = avif
            $0.service.webp = webp
        }
        #expect(await s.pipeline.canEncode(.avif), "this libvips encodes AVIF")
        return s
    }

    @Test func aBetterFormatIsKeptWhenItSavesBytes() async throws {
        let s = try await Self.harness(webp: .behind)
        // A smooth gradient: where AVIF's prediction saves the most.
        s.origin.register("zone.jpg", .init(body: try Fixtures.image(width: 600, height: 600, suffix: ".jpg"), contentType: "image/jpeg"))
        let path = try s.path("/img/zone.jpg", "300x300,fit=cover")
        let coldBytes = try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: Self.chrome) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/jpeg")
                #expect(response.headers[.vary] == "Accept, Save-Data")
                #expect(Self.maxAge(response).map { $0 <= 60 } == true, "an answer to be upgraded comes back soon")
                return response.body.readableBytes
            }
        }
        await s.pipeline.waitForUpgrades()
        #expect(s.pipeline.upgradeCounts == UpgradeCounts(kept: 1, noGain: 0, failed: 0))
        try await s.app().test(.router) { client in
            for _ in 0..<2 {  // from disk, then from memory
                try await client.execute(uri: path, method: .get, headers: Self.chrome) { response in
                    #expect(response.headers[.contentType] == "image/avif")
                    #expect(Sniffer.sniff(Data(buffer: response.body)).mimeType == "image/avif")
                    #expect(Double(response.body.readableBytes) <= Double(coldBytes) * ImagePipeline.upgradeGain)
                    #expect(Self.maxAge(response).map { $0 > 60 } == true, "the final answer has the normal lifetime")
                }
            }
            // An old client still gets JPEG; nothing new is queued for it.
            try await client.execute(uri: path, method: .get, headers: [.accept: "image/jpeg"]) { response in
                #expect(response.headers[.contentType] == "image/jpeg")
            }
        }
        await s.pipeline.waitForUpgrades()
        #expect(s.pipeline.upgradeCounts.kept == 1)
        // The cold JPEG (also the old client's answer) and the AVIF.
        #expect(try await s.pipeline.stats().variants == 2 && s.origin.requestCount("/img/zone.jpg") == 1)
        try await s.close()
    }

    @Test func noGainIsRememberedAndNeverTriedAgain() async throws {
        let s = try await Self.harness(avif: .cold)
        // A flat image: a few dozen bytes of WebP or JPEG; its AVIF is mostly
        // container, whatever the effort. Whatever the table makes the cold
        // answer, the better encoding behind it cannot save 15%.
        s.origin.register("flat.png", .init(body: try Fixtures.image(width: 8, height: 8, suffix: ".png"), contentType: "image/png"))
        let path = try s.path("/img/flat.png", "16x16,fit=cover")
        let choice = Self.chromeChoice(s, 16)
        try #require(choice.better != nil, "the table proposes an upgrade at 16 px")
        let cold = Self.mime(choice.cold)
        try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: Self.chrome) { response in
                #expect(response.headers[.contentType] == cold)
                #expect(Self.maxAge(response).map { $0 <= 60 } == true)
            }
        }
        await s.pipeline.waitForUpgrades()
        #expect(s.pipeline.upgradeCounts == UpgradeCounts(kept: 0, noGain: 1, failed: 0))
        try await s.app().test(.router) { client in
            for _ in 0..<3 {
                try await client.execute(uri: path, method: .get, headers: Self.chrome) { response in
                    #expect(response.headers[.contentType] == cold)
                    #expect(Self.maxAge(response).map { $0 > 60 } == true, "no upgrade coming: the normal lifetime")
                }
            }
        }
        await s.pipeline.waitForUpgrades()
        #expect(s.pipeline.upgradeCounts == UpgradeCounts(kept: 0, noGain: 1, failed: 0), "never encoded again")
        // The row remembers it (schema v11 `no_gain`): a new pipeline on the same cache sees it.
        let variants = try await s.pipeline.store.variants(of: try NormalizedURL(s.origin.url("/img/flat.png")).key)
        if choice.better == choice.cold {
            #expect(variants.count == 1 && variants.first?.upgrade == .noGain)
        } else {
            // Another format: its own no-gain bit on the cold row.
            let bit = 1 << Answers.noGainBit(try #require(choice.better))
            #expect(variants.count == 1 && variants.first.map { $0.noGainFormats & bit != 0 } == true)
        }
        try await s.close()
    }

    @Test func aWarmHitNegotiatesFromMemory() async throws {
        let s = try await ServiceHarness()
        try s.register("a.jpg", width: 200, height: 200)
        let path = try s.path("/img/a.jpg", "100x100")
        var types: [String?] = []
        for round in 0..<3 {
            for accept in [FormatPolicyTests.chrome, "image/jpeg"] {
                let (type, vary) = try await s.app().test(.router) { client in
                    try await client.execute(uri: path, method: .get, headers: [.accept: accept]) { response in
                        (response.headers[.contentType], response.headers[.vary])
                    }
                }
                types.append(type)
                #expect(vary == "Accept, Save-Data")
            }
            if round == 0 { await s.pipeline.waitForUpgrades() }  // whatever the first answer queued has ended
        }
        #expect(types[0] != "image/jpeg", "Chrome gets AVIF or WebP")
        #expect(types[2] == types[0] && types[4] == types[0])
        #expect(types[1] == "image/jpeg" && types[3] == "image/jpeg" && types[5] == "image/jpeg")
        // The last round came from memory (the JPEG one of round 2 too).
        #expect(try await s.pipeline.stats().memory.hits >= 3)
        #expect(s.origin.requestCount("/img/a.jpg") == 1)
        try await s.close()
    }

    /// Issue 49 item 3: the upgrade's outcome belongs to the request, not to
    /// the row or tier that answers it. After a restart, with only the cold
    /// JPEG in memory (a JPEG client asked first), Chrome gets the AVIF
    /// kept before the restart, and no upgrade job starts again.
    @Test func aKeptUpgradeIsFoundAfterARestartWithTheColdBytesInMemory() async throws {
        let s = try await Self.harness(webp: .behind)
        s.origin.register("zone.jpg", .init(body: try Fixtures.image(width: 600, height: 600, suffix: ".jpg"), contentType: "image/jpeg"))
        let path = try s.path("/img/zone.jpg", "300x300,fit=cover")
        try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: Self.chrome) { response in
                #expect(response.headers[.contentType] == "image/jpeg")
            }
        }
        await s.pipeline.waitForUpgrades()
        #expect(s.pipeline.upgradeCounts == UpgradeCounts(kept: 1, noGain: 0, failed: 0))
        try await s.close()
        // The restart: a new pipeline and service over the same cache.
        let (pipeline, service) = try await s.restarted()
        try await buildApplication(service: service).test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: [.accept: "image/jpeg"]) { response in
                #expect(response.headers[.contentType] == "image/jpeg", "a JPEG client: the cold bytes back in memory")
            }
            for round in 1...3 {  // from disk, then from memory
                try await client.execute(uri: path, method: .get, headers: Self.chrome) { response in
                    #expect(response.headers[.contentType] == "image/avif", "round \(round)")
                    #expect(Self.maxAge(response).map { $0 > 60 } == true, "round \(round): the final answer's lifetime")
                }
            }
        }
        await pipeline.waitForUpgrades()
        #expect(pipeline.upgradeCounts == UpgradeCounts(), "no upgrade ran again")
        #expect((pipeline.background.counts[.formatUpgrade]?.finished ?? 0) == 0, "none was queued")
        #expect(s.origin.requestCount("/img/zone.jpg") == 1)
        try await pipeline.close()
    }

    /// Issue 49 item 3: an upgrade's outcome is kept per better format. A
    /// cold variant whose own slower effort gave no gain (or replaced it)
    /// still leaves Chrome's AVIF to try, and a "no gain" in AVIF leaves
    /// WebP to try; both survive the other's writes (the bits of `upgrade`).
    @Test func upgradeOutcomesAreKeptPerBetterFormat() async throws {
        let s = try await Self.harness()
        s.origin.register("zone.jpg", .init(body: try Fixtures.image(width: 600, height: 600, suffix: ".jpg"), contentType: "image/jpeg"))
        await s.pipeline.background.close()  // nothing runs behind: the test sets the outcomes
        let response = try await s.pipeline.image(ImageRequest(url: s.origin.url("/img/zone.jpg"), size: ImageSize(300), fit: .cover,
                                                               format: .webp))
        let key = try #require(response.entry?.key)
        func row() async throws -> CacheEntry { try #require(try await s.pipeline.store.entry(forKey: CacheKey(hex: key))) }
        let cold = try await row()
        #expect(Answers.format(of: cold) == .webp)
        #expect(Answers.leavesUpgrade(cold, to: .webp) && Answers.leavesUpgrade(cold, to: .avif))
        try await s.pipeline.store.setUpgrade(key: key, sha256: cold.sha256, .noGain)
        let sameTried = try await row()
        #expect(!Answers.leavesUpgrade(sameTried, to: .webp), "WebP at the slower effort: tried")
        #expect(Answers.leavesUpgrade(sameTried, to: .avif), "AVIF: still to try")
        try await s.pipeline.store.setNoGain(key: key, sha256: cold.sha256, format: Answers.noGainBit(.avif))
        try await s.pipeline.store.setUpgrade(key: key, sha256: cold.sha256, .upgraded)
        let both = try await row()
        #expect(both.upgrade == .upgraded && !Answers.leavesUpgrade(both, to: .avif), "AVIF's no gain kept across the other write")
        #expect(Answers.leavesUpgrade(both, to: .jpeg) && both.noGainFormats == 1 << Answers.noGainBit(.avif))
        try await s.close()
    }
}

