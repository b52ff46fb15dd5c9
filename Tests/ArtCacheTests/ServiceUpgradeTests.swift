import ArtCacheOrigin
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
@testable import ArtCache
@_spi(Benchmarks) @testable import ArtCacheCore
@_spi(Benchmarks) @testable import ArtCacheRender
@_spi(Benchmarks) @testable import ArtCacheStore
@testable import ArtCacheServer

/// Format upgrades behind cold answers (README "What browsers get"), with
/// real libvips encoders: `[service] avif = "behind"` makes WebP the cold
/// answer for Chrome and AVIF the better one.
@Suite("Service: format upgrades", .timeLimit(.minutes(2)))
struct ServiceUpgradeTests {
    static let chrome: HTTPFields = [.accept: FormatPolicyTests.chrome]

    static func maxAge(_ response: TestResponse) -> Int? {
        guard let value = response.headers[.cacheControl], let range = value.range(of: "max-age=") else { return nil }
        return Int(value[range.upperBound...].prefix { $0.isNumber })
    }

    static func harness() async throws -> ServiceHarness {
        let s = try await ServiceHarness { $0.service.avif = .behind }
        #expect(await s.pipeline.canEncode(.avif), "this libvips encodes AVIF")
        return s
    }

    @Test func aBetterFormatIsKeptWhenItSavesBytes() async throws {
        let s = try await Self.harness()
        // A smooth gradient: where AVIF's prediction saves the most.
        s.origin.register("zone.jpg", .init(body: try Fixtures.image(width: 600, height: 600, suffix: ".jpg"), contentType: "image/jpeg"))
        let path = try s.path("/img/zone.jpg", "300x300,fit=cover")
        let coldBytes = try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: Self.chrome) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/webp")
                #expect(response.headers[.vary] == "Accept")
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
        #expect(try await s.pipeline.stats().variants == 3 && s.origin.requestCount("/img/zone.jpg") == 1)
        try await s.close()
    }

    @Test func noGainIsRememberedAndNeverTriedAgain() async throws {
        let s = try await Self.harness()
        // A flat image: a few dozen bytes of WebP, an AVIF container costs more.
        s.origin.register("flat.png", .init(body: try Fixtures.image(width: 8, height: 8, suffix: ".png"), contentType: "image/png"))
        let path = try s.path("/img/flat.png", "16x16,fit=cover")
        try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: Self.chrome) { response in
                #expect(response.headers[.contentType] == "image/webp")
                #expect(Self.maxAge(response).map { $0 <= 60 } == true)
            }
        }
        await s.pipeline.waitForUpgrades()
        #expect(s.pipeline.upgradeCounts == UpgradeCounts(kept: 0, noGain: 1, failed: 0))
        try await s.app().test(.router) { client in
            for _ in 0..<3 {
                try await client.execute(uri: path, method: .get, headers: Self.chrome) { response in
                    #expect(response.headers[.contentType] == "image/webp")
                    #expect(Self.maxAge(response).map { $0 > 60 } == true, "no upgrade coming: the normal lifetime")
                }
            }
        }
        await s.pipeline.waitForUpgrades()
        #expect(s.pipeline.upgradeCounts == UpgradeCounts(kept: 0, noGain: 1, failed: 0), "never encoded again")
        // The row remembers it (schema v11 `no_gain`): a new pipeline on the same cache sees it.
        let variants = try await s.pipeline.store.variants(of: try NormalizedURL(s.origin.url("/img/flat.png")).key)
        #expect(variants.count == 1 && variants.first?.noGain == true)
        try await s.close()
    }

    @Test func aWarmHitNegotiatesFromMemory() async throws {
        let s = try await ServiceHarness()
        try s.register("a.jpg", width: 200, height: 200)
        let path = try s.path("/img/a.jpg", "100x100")
        try await s.app().test(.router) { client in
            var types: [String?] = []
            for accept in [FormatPolicyTests.chrome, "image/jpeg", FormatPolicyTests.chrome, "image/jpeg"] {
                try await client.execute(uri: path, method: .get, headers: [.accept: accept]) { response in
                    types.append(response.headers[.contentType])
                    #expect(response.headers[.vary] == "Accept")
                }
            }
            #expect(types[0] == types[2] && types[1] == "image/jpeg" && types[3] == "image/jpeg")
            #expect(types[0] != "image/jpeg", "Chrome gets AVIF or WebP")
        }
        // Each format rendered once; the second round was answered from memory.
        let stats = try await s.pipeline.stats()
        #expect(stats.memory.hits >= 2)
        #expect(s.origin.requestCount("/img/a.jpg") == 1)
        try await s.close()
    }
}
