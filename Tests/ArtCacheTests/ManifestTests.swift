@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheFixtures
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheResultSets
@testable import ArtCacheServiceGrammar
@testable import ArtCacheStore
import Foundation
import Testing

/// Manifests: a result set in, per item in result order everything a page
/// needs before the images arrive; never waiting on the network.
@Suite("Manifests", .timeLimit(.minutes(2)))
struct ManifestTests {
    static func jpeg(_ h: LoopbackHarness, _ name: String, _ width: Int, _ height: Int) throws {
        h.origin.register(name, .init(body: try Fixtures.image(width: width, height: height, suffix: ".jpg"),
                                      contentType: "image/jpeg", cacheControl: "max-age=3600"))
    }

    @Test func cachedPendingAndFailedItemsInResultOrder() async throws {
        let h = try await LoopbackHarness { $0.download.retries = 0 }
        defer { h.origin.stop() }
        let held = try HeldPort()  // refuses: a network failure, kept in the retry queue
        try Self.jpeg(h, "c.jpg", 120, 80)
        try Self.jpeg(h, "p.jpg", 60, 60)
        let (cachedURL, failedURL, pendingURL) = (h.url("/img/c.jpg"), held.baseURL + "/img/f.jpg", h.url("/img/p.jpg"))
        _ = try await h.pipeline.info(for: cachedURL)
        await #expect(throws: ArtCacheError.self) { _ = try await h.pipeline.image(ImageRequest(url: failedURL)) }

        let document = """
            {"resultCount": 3, "results": [
              {"trackId": 11, "artworkUrl100": "\(cachedURL)"},
              {"trackId": 12, "artworkUrl60": "\(failedURL)"},
              {"collectionId": 13, "artworkUrl100": "\(pendingURL)"}]}
            """
        let resultSet = try ResultSet.parse(Data(document.utf8))
        let manifest = try await h.pipeline.manifest(for: resultSet, sizes: [ImageSize(width: 100, height: 100)])
        #expect(manifest.format == .itunes)
        // The refused connection is a network failure: it waits in the retry queue (retrying).
        #expect(manifest.items.map(\.status) == [.cached, .retrying, .pending])
        #expect(manifest.items.map(\.id) == ["11", "12", "13"])
        #expect(manifest.items.map(\.index) == [0, 1, 2])
        let cached = manifest.items[0]
        #expect((cached.width, cached.height) == (120, 80))
        #expect(cached.fetchedURL == cachedURL)
        #expect(cached.color?.count == 7 && cached.thumbhash != nil)
        #expect(cached.animated == false && cached.frames == 1)
        #expect(cached.placeholder?.hasPrefix("data:image/png;base64,") == true)
        #expect(manifest.items[1].reason == "connect", "\(String(describing: manifest.items[1].reason))")
        #expect(manifest.items[1].retryAfter.map { (0...30).contains($0) } == true, "offline_retry_after (30 s) at most")
        #expect(manifest.items[2].width == nil && manifest.items[2].placeholder == nil && manifest.items[2].reason == nil)
        let references = try #require(cached.variants["100x100"])
        #expect(references["2x"] == ImageManifest.Reference(url: cachedURL, size: ImageSize(width: 200, height: 200), fit: .contain))
        #expect(Set(references.keys) == ["1x", "2x", "3x"])

        // The pending one was handed to the prefetcher (no waiting in manifest()).
        await h.origin.waitForRequest("/img/p.jpg")

        // The JSON has exactly the documented fields, null when unknown.
        let json = try JSONSerialization.jsonObject(with: try manifest.json()) as? [String: Any]
        let items = try #require(json?["items"] as? [[String: Any]])
        #expect(Set(items[2].keys) == ["index", "id", "url", "fetched_url", "status", "reason", "retry_after", "width", "height",
                                       "color", "thumbhash", "placeholder", "animated", "frames", "variants"])
        #expect(items[2]["width"] is NSNull)
        let descriptor = (items[0]["variants"] as? [String: [String: [String: String]]])?["100x100"]?["1x"]
        #expect(descriptor == ["url": cachedURL, "size": "100x100", "fit": "contain"])
        try await h.pipeline.close()
    }

    /// Permanent failures are `failed` with their typed reason and never
    /// queued again: 404 and not-an-image from the negative table, a source
    /// or an address literal the policy refuses at once (no download).
    @Test func permanentFailuresAreFailedAndNotQueuedAgain() async throws {
        let h = try await LoopbackHarness { configuration in
            configuration.download.retries = 0
            configuration.download.allowedNetworks = [IPNetwork("127.0.0.1/32")!]
            configuration.download.allowedSources = [HostPattern("127.0.0.1")!, HostPattern("127.0.0.2")!]
        }
        defer { h.origin.stop() }
        let (gone, html) = (h.url("/status/404"), h.url("/html200"))
        await #expect(throws: ArtCacheError.self) { _ = try await h.pipeline.image(ImageRequest(url: gone)) }
        await #expect(throws: ArtCacheError.self) { _ = try await h.pipeline.image(ImageRequest(url: html)) }
        let blockedSource = "http://blocked.invalid/a.jpg"
        let blockedAddress = "http://127.0.0.2:\(h.origin.port)/img/a.jpg"
        let set = ResultSet(format: .urls, urls: [gone, html, blockedSource, blockedAddress])
        let manifest = try await h.pipeline.manifest(for: set, sizes: [ImageSize(width: 64, height: 64)])
        #expect(manifest.items.map(\.status) == [.failed, .failed, .failed, .failed])
        #expect(manifest.items.map(\.reason) == ["http_404", "not_an_image", "blocked_source", "blocked_address"])
        let warmUps = h.pipeline.background.counts[.warmUp]
        #expect(warmUps?.queued == 0 && warmUps?.running == 0 && warmUps?.finished == 0, "nothing was queued")
        // Asked again: still failed, still nothing queued or fetched.
        let again = try await h.pipeline.manifest(for: set, sizes: [ImageSize(width: 64, height: 64)])
        #expect(again.items.map(\.reason) == manifest.items.map(\.reason))
        #expect(h.pipeline.background.counts[.warmUp]?.finished == 0)
        #expect(h.origin.requestCount("/status/404") == 1 && h.origin.requestCount("/html200") == 1)
        try await h.pipeline.close()
    }

    /// A host that resolves to a blocked address is refused at connect time;
    /// that answer is remembered like a 404, so a manifest says `failed`
    /// (`blocked_address`) and the item is not queued again.
    @Test func aBlockedAddressFoundAtConnectTimeIsRemembered() async throws {
        let h = try await LoopbackHarness { configuration in
            configuration.download.retries = 0
            configuration.download.allowedNetworks = []  // loopback refused at connect time
        }
        defer { h.origin.stop() }
        let url = "http://localhost:\(h.origin.port)/img/a.jpg"
        do {
            _ = try await h.pipeline.image(ImageRequest(url: url))
            Issue.record("a loopback source was fetched")
        } catch {
            #expect(error.code == .network(.blockedAddress), "\(error)")
        }
        let manifest = try await h.pipeline.manifest(for: ResultSet(format: .urls, urls: [url]), sizes: [ImageSize(width: 64, height: 64)])
        #expect(manifest.items.first?.status == .failed && manifest.items.first?.reason == "blocked_address")
        #expect(h.pipeline.background.counts[.warmUp]?.queued == 0 && h.pipeline.background.counts[.warmUp]?.finished == 0)
        // Remembered: asked again, the typed refusal comes from the table.
        do {
            _ = try await h.pipeline.image(ImageRequest(url: url))
            Issue.record("a loopback source was fetched")
        } catch {
            #expect(error.code == .network(.blockedAddress), "\(error)")
        }
        #expect(h.origin.totalRequests == 0, "no request ever reached the origin")
        try await h.pipeline.close()
    }

    @Test func signedReferencesAreServicePathsThatVerify() async throws {
        let h = try await LoopbackHarness()
        defer { h.origin.stop() }
        let signer = ServiceURLSigner(keys: [Array(repeating: 7, count: 32)], salt: [1, 2])
        let url = h.url("/img/none.jpg")
        let manifest = try await h.pipeline.manifest(for: ResultSet(format: .urls, urls: [url]),
                                                     sizes: [ImageSize(width: 64, height: 48)], signer: signer)
        let reference = try #require(manifest.items.first?.variants["64x48"]?["3x"])
        let path = try #require(reference.path)
        let parts = path.split(separator: "/", maxSplits: 1)
        #expect(signer.isValid(signature: String(parts[0]), for: "/" + parts[1]))
        #expect(path.contains("/192x144"), "\(path)")
        let encoded = try JSONEncoder().encode(reference)
        #expect(String(decoding: encoded, as: UTF8.self) == "\"" + path.replacingOccurrences(of: "/", with: "\\/") + "\"")
        try await h.pipeline.close()
    }

    /// `priority` signs the class into every reference (`pri=`); without
    /// it the references carry none.
    @Test func signedReferencesCarryTheClassAskedFor() async throws {
        let h = try await LoopbackHarness()
        defer { h.origin.stop() }
        let signer = ServiceURLSigner(keys: [Array(repeating: 7, count: 32)])
        let set = ResultSet(format: .urls, urls: [h.url("/img/none.jpg")])
        for (priority, token) in [(ImagePriority.high, ",pri=high/"), (.low, ",pri=low/")] {
            let manifest = try await h.pipeline.manifest(for: set, sizes: [ImageSize(width: 64, height: 64)], fit: .cover,
                                                         signer: signer, priority: priority)
            let references = try #require(manifest.items.first?.variants["64x64"])
            #expect(references.count == 3)
            for (density, reference) in references {
                let path = try #require(reference.path)
                #expect(path.contains(token), "\(density): \(path)")
                let parts = path.split(separator: "/", maxSplits: 1)
                #expect(signer.isValid(signature: String(parts[0]), for: "/" + parts[1]))
            }
        }
        let plain = try await h.pipeline.manifest(for: set, sizes: [ImageSize(width: 64, height: 64)], signer: signer)
        #expect(plain.items.first?.variants["64x64"]?.values.allSatisfy { $0.path?.contains("pri=") == false } == true)
        try await h.pipeline.close()
    }

    /// Each result-set kind gives its items in result order with its ids,
    /// and its manifest lists them so (nothing cached; the public hosts are
    /// outside allowed_sources, so every item is failed at once, never fetched).
    @Test func everyResultSetKindHasItsIds() async throws {
        let dir = TempDir()
        let pipeline = try await Fixtures.pipeline(dir.path) { $0.download.allowedSources = [HostPattern("127.0.0.1")!] }
        let cases: [(String, ResultSetFormat, [String?])] = [
            (#"{"total_count":2,"items":[{"id":1,"login":"a","avatar_url":"https://avatars.githubusercontent.com/u/1?v=4"},{"id":2,"login":"b","avatar_url":"https://avatars.githubusercontent.com/u/2?v=4"}]}"#,
             .githubUsers, ["1", "2"]),
            (#"{"total_count":1,"items":[{"id":99,"full_name":"o/r","owner":{"id":5,"avatar_url":"https://avatars.githubusercontent.com/u/5?v=4"}}]}"#,
             .githubRepos, ["99"]),
            (#"[{"id_str":"1001","text":"hi","user":{"id_str":"7","screen_name":"a","profile_image_url_https":"https://pbs.twimg.com/profile_images/1/a_normal.jpg"}},{"id_str":"8","screen_name":"b","profile_image_url_https":"https://pbs.twimg.com/profile_images/2/b_normal.png"}]"#,
             .twitter, ["1001", "8"]),
            ("https://example.com/a.jpg\nhttps://example.com/b.jpg\n", .urls, [nil, nil]),
        ]
        for (document, format, ids) in cases {
            let set = try ResultSet.parse(Data(document.utf8))
            #expect(set.format == format)
            #expect(set.items.map(\.id) == ids, "\(format)")
            #expect(set.items.allSatisfy { set.urls.contains($0.url) })
            let manifest = try await pipeline.manifest(for: set, sizes: [ImageSize(width: 48, height: 48)])
            #expect(manifest.format == format)
            #expect(manifest.items.map(\.id) == ids && manifest.items.map(\.url) == set.items.map(\.url), "\(format)")
            #expect(manifest.items.allSatisfy { $0.status == .failed && $0.reason == "blocked_source" && $0.variants["48x48"]?.count == 3 })
        }
        try await pipeline.close()
    }

    @Test func theCLIPrintsTheManifestAndRefusesSigningWithoutAKey() async throws {
        let dir = TempDir()
        let file = dir.write("set.txt", "https://example.com/a.jpg\n")
        let cache = dir.file("cache")
        // Its host is outside allowed_sources: failed at once, never queued (tests never leave loopback).
        let local = ["ARTCACHE_DOWNLOAD_ALLOWED_SOURCES": "127.0.0.1"]
        // `manifest` only reads: a cache must be there (issue 49).
        let none = try await CLI.run(["manifest", file, "--cache-dir", cache], environment: local)
        #expect(none.status == 1 && none.stderr.contains("no cache at \(cache)"), "\(none.stderr)")
        #expect(try await CLI.run(["verify", "--repair", "--cache-dir", cache]).status == 0)
        let printed = try await CLI.run(["manifest", file, "--sizes", "100x100,300x200", "--json", "--cache-dir", cache],
                                        environment: local)
        #expect(printed.status == 0, "\(printed.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(printed.stdout.utf8)) as? [String: Any]
        let item = try #require((json?["items"] as? [[String: Any]])?.first)
        #expect(item["status"] as? String == "failed" && item["reason"] as? String == "blocked_source")
        #expect((item["variants"] as? [String: Any])?.keys.sorted() == ["100x100", "300x200"])
        let unsigned = try await CLI.run(["manifest", file, "--sign", "--cache-dir", cache], environment: local)
        #expect(unsigned.status == 78 && unsigned.stderr.contains("service.keys"))
        let badSizes = try await CLI.run(["manifest", file, "--sizes", "big", "--cache-dir", cache], environment: local)
        #expect(badSizes.status == 64)
    }

    /// `artcache manifest` reads the answers the cache remembers: a URL whose
    /// `get` was answered 404, or with an HTML page, is `failed` with that
    /// reason, from the same cache in another process, and is not fetched again.
    @Test(.timeLimit(.minutes(2))) func theCLISaysWhatFailedFromTheCachesMemory() async throws {
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let dir = TempDir()
        let cache = dir.file("cache")
        let loopback = ["ARTCACHE_DOWNLOAD_ALLOWED_SOURCES": "127.0.0.1", "ARTCACHE_DOWNLOAD_ALLOWED_NETWORKS": "127.0.0.1/32",
                        "ARTCACHE_DOWNLOAD_RETRIES": "0"]
        let (gone, html) = (origin.url("/status/404"), origin.url("/html200"))
        for url in [gone, html] {
            let got = try await CLI.run(["get", url, "--cache-dir", cache], environment: loopback)
            #expect(got.status != 0, "\(url): \(got.stdout)")
        }
        let file = dir.write("set.txt", "\(gone)\n\(html)\n")
        let printed = try await CLI.run(["manifest", file, "--sizes", "64x64", "--json", "--cache-dir", cache], environment: loopback)
        #expect(printed.status == 0, "\(printed.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(printed.stdout.utf8)) as? [String: Any]
        let items = try #require(json?["items"] as? [[String: Any]])
        #expect(items.map { $0["status"] as? String } == ["failed", "failed"], "\(printed.stdout)")
        #expect(items.map { $0["reason"] as? String } == ["http_404", "not_an_image"], "\(printed.stdout)")
        #expect(origin.requestCount("/status/404") == 1 && origin.requestCount("/html200") == 1)
    }
}
