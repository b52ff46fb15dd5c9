@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheFixtures
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// Provider profiles through the pipeline, against the loopback origin: a
/// profile of the tests' own for 127.0.0.1 reads iTunes-style `{W}x{H}bb`
/// names under /img/ (the built-in ones name public hosts).
@Suite("Pipeline: provider profiles", .timeLimit(.minutes(2)))
struct ProfilePipelineTests {
    static func harness() async throws -> LoopbackHarness {
        let harness = try await LoopbackHarness { configuration in
            try! configuration.profiles.set("loopback", line: "hosts=127.0.0.1 path=/img/ size=dimensions max=1000")
        }
        for side in [100, 250, 300] {
            harness.origin.register("\(side)x\(side)bb.jpg", .init(body: try Fixtures.image(width: side, height: side, suffix: ".jpg"),
                                                                  contentType: "image/jpeg", cacheControl: "max-age=3600"))
        }
        return harness
    }

    /// The test: a 100x100 iTunes URL asked for at 300 px is fetched
    /// as 300 px from the origin, never upscaled from 100.
    @Test func aSmallArtworkURLAskedForLargerIsFetchedLarger() async throws {
        let h = try await Self.harness()
        defer { h.origin.stop() }
        let given = h.url("/img/100x100bb.jpg")
        let thumb = try await h.pipeline.image(ImageRequest(url: given, width: 300, height: 300))
        #expect((thumb.width, thumb.height) == (300, 300))
        #expect(h.origin.requestCount("/img/300x300bb.jpg") == 1)
        #expect(h.origin.requestCount("/img/100x100bb.jpg") == 0, "the 100 px rendition was never fetched")
        await h.store.waitForWritesBehind()
        let entry = try #require(try await h.store.entry(forURL: given), "the key stays the URL given")
        #expect(entry.fetchedURL == h.url("/img/300x300bb.jpg"))
        #expect(entry.rendition == 300)
        // Smaller outputs come from what is stored: no request.
        let small = try await h.pipeline.image(ImageRequest(url: given, width: 64, height: 64))
        #expect(small.width == 64)
        #expect(h.origin.requestCount("/img/300x300bb.jpg") == 1 && h.origin.requestCount("/img/100x100bb.jpg") == 0)
        // get --json shows it.
        try await h.pipeline.close()
        let info = try await CLI.json(["get", given, "--json", "--cache-dir", h.dir.path], environment: Fixtures.loopbackEnvironment)
        #expect(info["fetched_url"] as? String == h.url("/img/300x300bb.jpg"))
        #expect(info["width"] as? Int == 300)
    }

    /// A stored original smaller than a request needs is replaced by the
    /// larger rendition, and the variants of the old bytes go with them.
    @Test func aLargerRenditionReplacesTheStoredOriginal() async throws {
        let h = try await Self.harness()
        defer { h.origin.stop() }
        let given = h.url("/img/100x100bb.jpg")
        _ = try await h.pipeline.image(ImageRequest(url: given, width: 80, height: 80))
        #expect(h.origin.requestCount("/img/100x100bb.jpg") == 1, "80 px: the URL given is large enough")
        await h.store.waitForWritesBehind()
        let before = try #require(try await h.store.entry(forURL: given))
        #expect(before.fetchedURL == nil && before.rendition == nil)
        let small = CacheKey(parent: before.cacheKey, spec: VariantSpec(width: 80, height: 80).canonical)
        #expect(try await h.store.entry(forKey: small) != nil)

        let large = try await h.pipeline.image(ImageRequest(url: given, width: 250, height: 250))
        #expect(large.width == 250)
        #expect(h.origin.requestCount("/img/300x300bb.jpg") == 0, "250: the smallest rendition at least that large")
        #expect(h.origin.requestCount("/img/250x250bb.jpg") == 1)
        await h.store.waitForWritesBehind()
        let after = try #require(try await h.store.entry(forURL: given))
        #expect(after.rendition == 250 && after.sha256 != before.sha256)
        #expect(try await h.store.entry(forKey: small) == nil, "the old bytes' variant went with them")
        try await h.pipeline.close()
    }

    /// A rendition the origin does not have (404) falls back to the URL given,
    /// and the profile is left out for that URL (not its host) for fallback_ttl.
    @Test func aFailedRenditionFallsBackAndIsRememberedForThatURL() async throws {
        let h = try await Self.harness()
        defer { h.origin.stop() }
        h.origin.register("a60x60bb.jpg", .init(body: try Fixtures.image(width: 60, height: 60, suffix: ".jpg"),
                                                contentType: "image/jpeg", cacheControl: "max-age=3600"))
        h.origin.register("b60x60bb.jpg", .init(body: try Fixtures.image(width: 60, height: 60, suffix: ".jpg"),
                                                contentType: "image/jpeg", cacheControl: "max-age=3600"))
        let a = try await h.pipeline.image(ImageRequest(url: h.url("/img/a60x60bb.jpg"), width: 120, height: 120))
        #expect(a.source == .network)
        #expect(h.origin.requestCount("/img/a120x120bb.jpg") == 1)
        #expect(h.origin.requestCount("/img/a60x60bb.jpg") == 1, "fell back to the URL given")
        // Another URL of the same host still gets its rendition tried.
        _ = try await h.pipeline.image(ImageRequest(url: h.url("/img/b60x60bb.jpg"), width: 120, height: 120))
        #expect(h.origin.requestCount("/img/b120x120bb.jpg") == 1)
        #expect(h.origin.requestCount("/img/b60x60bb.jpg") == 1)
        // Within fallback_ttl the failed URL's rendition is not tried again.
        _ = try await h.pipeline.image(ImageRequest(url: h.url("/img/a60x60bb.jpg"), width: 240, height: 240,
                                                    options: [.reloadIgnoringCache]))
        #expect(h.origin.requestCount("/img/a240x240bb.jpg") == 0)
        #expect(h.origin.requestCount("/img/a60x60bb.jpg") == 2)
        try await h.pipeline.close()
    }

    /// A rendition that answers 200 with bytes that are not an image (an
    /// HTML page) falls back to the URL given, like a 404.
    @Test func aRenditionThatIsNotAnImageFallsBack() async throws {
        let h = try await Self.harness()
        defer { h.origin.stop() }
        h.origin.register("c60x60bb.jpg", .init(body: try Fixtures.image(width: 60, height: 60, suffix: ".jpg"),
                                                contentType: "image/jpeg", cacheControl: "max-age=3600"))
        h.origin.register("c120x120bb.jpg", .init(body: Data("<!doctype html><html><body>gone</body></html>".utf8),
                                                  contentType: "image/jpeg", cacheControl: "max-age=3600"))
        let c = try await h.pipeline.image(ImageRequest(url: h.url("/img/c60x60bb.jpg"), width: 120, height: 120))
        #expect(c.source == .network && c.error == nil)
        #expect(h.origin.requestCount("/img/c120x120bb.jpg") == 1)
        #expect(h.origin.requestCount("/img/c60x60bb.jpg") == 1, "fell back to the URL given")
        await h.store.waitForWritesBehind()
        let entry = try #require(try await h.store.entry(forURL: h.url("/img/c60x60bb.jpg")))
        #expect(entry.fetchedURL == nil && entry.rendition == nil, "fetched as given: \(String(describing: entry.fetchedURL))")
        try await h.pipeline.close()
    }

    /// A stored original smaller than a request needs, whose larger
    /// rendition fails on the network (a transfer past the download
    /// timeout): what is stored answers, and nothing is lost.
    @Test func aNetworkFailureWhileUpgradingServesTheStoredOriginal() async throws {
        let h = try await LoopbackHarness { configuration in
            try! configuration.profiles.set("slowloop", line: "hosts=127.0.0.1 path=/slow/ size=dimensions max=1000")
            configuration.download.timeout = 1
            configuration.download.retries = 0
        }
        defer { h.origin.stop() }
        h.origin.register("d60x60bb.jpg", .init(body: try Fixtures.image(width: 60, height: 60, suffix: ".jpg"),
                                                contentType: "image/jpeg", cacheControl: "max-age=3600"))
        // 256 bytes every 20 ms: 1 MiB would take 80 s; the download gives up after 1 s.
        h.origin.register("d120x120bb.jpg", .init(body: Data(repeating: 0xFF, count: 1 << 20), contentType: "image/jpeg",
                                                  cacheControl: "max-age=3600"))
        let given = h.url("/slow/20/d60x60bb.jpg")
        let small = try await h.pipeline.image(ImageRequest(url: given, width: 60, height: 60))
        #expect(small.source == .network && (small.width, small.height) == (60, 60))
        await h.store.waitForWritesBehind()
        let before = try #require(try await h.store.entry(forURL: given))
        let larger = try await h.pipeline.image(ImageRequest(url: given, width: 120, height: 120))
        #expect(h.origin.requestCount("/slow/20/d120x120bb.jpg") == 1, "the larger rendition was tried")
        #expect(larger.error == nil)
        #expect(h.origin.requestCount("/slow/20/d60x60bb.jpg") == 1, "the stored original answered: not fetched again")
        let after = try #require(try await h.store.entry(forURL: given))
        #expect(after.sha256 == before.sha256, "nothing stored was lost or replaced")
        // The 120 px answer made from the 60 px original is not kept (not on
        // disk, not in memory): the next request tries the larger rendition
        // again instead of being answered small for good (seen in the fronts'
        // browser check: a warm-up's rendition timed out under load, and the
        // page got the small thumbnail from disk).
        #expect((larger.width, larger.height) == (60, 60) && larger.cacheKey == nil)
        await h.store.waitForWritesBehind()
        let again = try await h.pipeline.image(ImageRequest(url: given, width: 120, height: 120))
        #expect(again.error == nil && again.width == 60)
        #expect(h.origin.requestCount("/slow/20/d120x120bb.jpg") == 2, "tried again: the small answer was not kept")
        try await h.pipeline.close()
    }

    /// `[profiles]` from cache.conf and the environment: a built-in name
    /// replaces (an empty line removes) that profile, others are added;
    /// `fallback_ttl` has its range; a bad line names its key.
    @Test func profilesFromFileAndEnvironment() throws {
        let dir = TempDir()
        let path = dir.write("cache.conf", """
            [profiles]
            fallback_ttl = "10m"
            github = ""
            itunes = "hosts=*.mzstatic.com size=dimensions max=1200"
            mine = "hosts=img.example.org path=/art/ size=query:w"
            """)
        let configuration = try Configuration.load(path: path, environment: [
            "ARTCACHE_PROFILES_OTHER": "hosts=o.example.net size=dimensions",
        ])
        let profiles = configuration.profiles
        #expect(profiles.fallbackTTL == 600)
        #expect(profiles.profiles.map(\.name) == ["itunes", "twitter", "gravatar", "mine", "other"])
        #expect(profiles.profile(for: "https://is1-ssl.mzstatic.com/a/100x100bb.jpg")?.max == 1200)
        #expect(profiles.profile(for: "https://avatars.githubusercontent.com/u/1?s=40") == nil)
        #expect(profiles.profile(for: "https://img.example.org/art/1.jpg")?.name == "mine")
        #expect(Configuration.defaults.profiles == ProfileSettings(), "no [profiles]: the four built in, fallback_ttl 1h")
        #expect(ProfileSettings().fallbackTTL == 3600 && ProfileSettings().profiles.count == 4)

        // The same in code.
        var inCode = ProfileSettings()
        try inCode.set("github", line: "")
        try inCode.set("mine", line: "hosts=img.example.org path=/art/ size=query:w:100")
        #expect(inCode.names == ["itunes", "twitter", "gravatar", "mine"])
        #expect(inCode.rendition(of: "https://img.example.org/art/1.jpg", pixels: 300) == "https://img.example.org/art/1.jpg?w=300")
        #expect(inCode.rendition(of: "https://avatars.githubusercontent.com/u/1?s=40", pixels: 300)
                == "https://avatars.githubusercontent.com/u/1?s=40", "removed")
        let refused = #expect(throws: ArtCacheError.self) { try inCode.set("x", line: "hosts=a.example") }
        #expect(refused?.code == .configuration)

        let bad = dir.write("bad.conf", "[profiles]\nbroken = \"hosts=a.example size=pixels\"\n")
        let error = #expect(throws: ArtCacheError.self) { try Configuration.load(path: bad, environment: [:]) }
        #expect(error?.code == .configuration)
        #expect(error?.message.hasPrefix(bad + ": profiles.broken: size=pixels: expected") == true, "\(String(describing: error))")
        let long = dir.write("long.conf", "[profiles]\nfallback_ttl = \"2d\"\n")
        #expect(throws: ArtCacheError.self) { try Configuration.load(path: long, environment: [:]) }
    }
}
