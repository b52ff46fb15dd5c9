@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
@testable import ArtCacheServiceGrammar
import Foundation
import Hummingbird
import NIOCore
import Testing

/// `POST /v1/manifest` (signed bodies: 401 without, 403 wrong, 413 too
/// large) and `GET /v1/info/{signature}/{source}`.
@Suite("Thumbnail service: manifests and info", .timeLimit(.minutes(2)))
struct ServiceManifestTests {
    @Test func aSignedResultSetGetsItsManifest() async throws {
        let s = try await ServiceHarness { $0.service.manifestMaxBody = 4096 }
        try s.register("a.jpg", width: 90, height: 60)
        let body = Array("""
            {"total_count":2,"items":[{"id":41,"avatar_url":"\(s.origin.url("/img/a.jpg"))"},{"id":42,"avatar_url":"\(s.origin.url("/img/b.jpg"))"}]}
            """.utf8)
        // Each step names itself when it throws (CI once saw "I/O on closed
        // channel" from this test under load, with no step to go on).
        @Sendable func step(_ name: String, _ body: () async throws -> Void) async throws {
            do { try await body() } catch {
                Issue.record("\(name): \(String(reflecting: error))")
                throw error
            }
        }
        try await step("pipeline.info") { _ = try await s.pipeline.info(for: s.origin.url("/img/a.jpg")) }
        try await s.app().test(.router) { client in
            try await step("POST /v1/manifest") {
                try await client.execute(uri: "/v1/manifest?sizes=48x48", method: .post,
                                         headers: s.signer.manifestHeaders(body, query: "sizes=48x48"), body: ByteBuffer(bytes: body)) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == "application/json")
                    let manifest = try JSONDecoder().decode(ImageManifest.self, from: Data(buffer: response.body))
                    #expect(manifest.format == .githubUsers)
                    #expect(manifest.items.map(\.id) == ["41", "42"])
                    #expect(manifest.items.map(\.status) == [.cached, .pending])
                    #expect((manifest.items[0].width, manifest.items[0].height) == (90, 60))
                    let path = try #require(manifest.items[0].variants["48x48"]?["2x"]?.path)
                    #expect(path.contains("/96x96"), "\(path)")
                }
            }
            // The signed 2x path it gave is an image this service serves.
            let manifestPath = s.signer.path(for: s.origin.url("/img/a.jpg"),
                                             options: ThumbnailOptions(size: ImageSize(width: 96, height: 96), fit: .contain))
            try await step("GET the 2x path") {
                try await client.execute(uri: manifestPath, method: .get) { response in
                    #expect(response.status == .ok)
                }
            }
            try await step("refusals (401, 403, 413, 400)") {
                // Missing signature: 401; wrong: 403; too large: 413; not a result set: 400.
                try await client.execute(uri: "/v1/manifest", method: .post, body: ByteBuffer(bytes: body)) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.artcacheError] == "missing_signature")
                }
                let other = ServiceURLSigner(keys: [Array(repeating: 1, count: 32)]).manifestHeaders(body)
                try await client.execute(uri: "/v1/manifest", method: .post, headers: other,
                                         body: ByteBuffer(bytes: body)) { response in
                    #expect(response.status == .forbidden)
                }
                let large = Array(repeating: UInt8(ascii: " "), count: 5000) + body
                try await client.execute(uri: "/v1/manifest", method: .post,
                                         headers: s.signer.manifestHeaders(large),
                                         body: ByteBuffer(bytes: large)) { response in
                    #expect(response.status == .contentTooLarge)
                }
                let junk = Array("{\"hello\": 1}".utf8)
                try await client.execute(uri: "/v1/manifest", method: .post,
                                         headers: s.signer.manifestHeaders(junk),
                                         body: ByteBuffer(bytes: junk)) { response in
                    #expect(response.status == .badRequest)
                }
            }
        }
        try await s.close()
    }

    /// Issue 36 item 3 through `POST /v1/manifest`: what failed for good —
    /// 404, 410, an HTML page, a source or address the policy refuses — is
    /// `failed` with its typed reason, is not queued, and is still `failed`
    /// (nothing fetched again) when the same result set is posted again.
    @Test func failedItemsAreFailedWithTheirReasonAndNotQueued() async throws {
        let s = try await ServiceHarness { configuration in
            configuration.download.retries = 0
            configuration.download.allowedNetworks = [IPNetwork("127.0.0.1/32")!]
            configuration.download.allowedSources = [HostPattern("127.0.0.1")!, HostPattern("127.0.0.2")!]
        }
        let (gone, removed, html) = (s.origin.url("/status/404"), s.origin.url("/status/410"), s.origin.url("/html200"))
        for url in [gone, removed, html] {
            await #expect(throws: ArtCacheError.self) { _ = try await s.pipeline.image(ImageRequest(url: url)) }
        }
        let urls = [gone, removed, html, "http://blocked.invalid/a.jpg", "http://127.0.0.2:\(s.origin.port)/img/a.jpg"]
        let body = Array(urls.joined(separator: "\n").utf8)
        try await s.app().test(.router) { client in
            for round in 1...2 {
                try await client.execute(uri: "/v1/manifest?sizes=48x48", method: .post,
                                         headers: s.signer.manifestHeaders(body, query: "sizes=48x48"), body: ByteBuffer(bytes: body)) { response in
                    #expect(response.status == .ok)
                    let manifest = try JSONDecoder().decode(ImageManifest.self, from: Data(buffer: response.body))
                    #expect(manifest.items.map(\.status) == Array(repeating: .failed, count: urls.count), "round \(round)")
                    #expect(manifest.items.map(\.reason) == ["http_404", "http_410", "not_an_image", "blocked_source", "blocked_address"],
                            "round \(round)")
                }
            }
        }
        let warmUps = s.pipeline.background.counts[.warmUp]
        #expect(warmUps?.queued == 0 && warmUps?.running == 0 && warmUps?.finished == 0, "nothing was queued")
        for path in ["/status/404", "/status/410", "/html200"] {
            #expect(s.origin.requestCount(path) == 1, "\(path): asked once, then remembered")
        }
        try await s.close()
    }

    @Test func infoIsSignedAsAnImagePathWithEmptyOptions() async throws {
        let s = try await ServiceHarness()
        try s.register("i.jpg", width: 80, height: 40)
        let path = s.signer.infoPath(for: s.origin.url("/img/i.jpg"))
        try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get) { response in
                #expect(response.status == .ok)
                let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                #expect(object?["width"] as? Int == 80 && object?["height"] as? Int == 40)
                #expect((object?["color"] as? String)?.count == 7)
                #expect((object?["placeholder"] as? String)?.hasPrefix("data:image/png;base64,") == true)
                #expect(object?["animated"] as? Bool == false && object?["frames"] as? Int == 1)
            }
            let forged = path.replacingOccurrences(of: "/v1/info/", with: "/v1/info/A")
            try await client.execute(uri: forged, method: .get) { response in
                #expect(response.status == .forbidden)
            }
        }
        try await s.close()
    }

    /// Issue 49 item 8: after its warm-ups have run, a manifest says what
    /// became of each item — too large, 5xx after the retries, stored but
    /// not renderable: `failed` with the reason; the network failing:
    /// `retrying` with `retry_after` — never `pending` for ever, nor
    /// `cached` with thumbnails that would answer 422 or 413.
    @Test func aManifestTellsWhatBecameOfEachItem() async throws {
        let held = try HeldPort()  // bound, never listening: connection refused
        let s = try await ServiceHarness { configuration in
            configuration.download.retries = 0
            configuration.download.maxBodyBytes = 20_000
        }
        let whole = try Fixtures.image(width: 400, height: 300, suffix: ".jpg")
        s.origin.register("big.jpg", .init(body: Fixtures.pngLike(size: 50_000), contentType: "image/png"))
        s.origin.register("cut.jpg", .init(body: whole.prefix(whole.count / 3), contentType: "image/jpeg"))
        try s.register("ok.jpg", width: 60, height: 40)
        let urls = [s.origin.url("/img/ok.jpg"), s.origin.url("/img/big.jpg"), s.origin.url("/status/503"),
                    s.origin.url("/img/cut.jpg"), "http://127.0.0.1:\(held.port)/gone.jpg"]
        let body = Array(urls.joined(separator: "\n").utf8)
        @Sendable func post(_ client: TestClient) async throws -> ImageManifest {
            let answer = try await client.execute(uri: "/v1/manifest?sizes=48x48", method: .post,
                                                  headers: s.signer.manifestHeaders(body, query: "sizes=48x48"), body: ByteBuffer(bytes: body))
            #expect(answer.status == .ok)
            return try JSONDecoder().decode(ImageManifest.self, from: Data(buffer: answer.body))
        }
        try await s.app().test(.router) { client in
            let first = try await post(client)
            #expect(first.items.map(\.status) == Array(repeating: .pending, count: urls.count))
            await s.pipeline.background.waitUntilIdle(.warmUp)
            await s.pipeline.store.waitForWritesBehind()
            let second = try await post(client)
            let outcome = second.items.map { "\($0.status.rawValue):\($0.reason ?? "-")" }
            #expect(outcome == ["cached:-", "failed:too_large", "failed:http_503", "failed:decode", "retrying:connect"],
                    "\(outcome)")
            #expect(second.items[4].retryAfter.map { (0...30).contains($0) } == true, "\(String(describing: second.items[4].retryAfter))")
            #expect(second.items.prefix(4).allSatisfy { $0.retryAfter == nil })
        }
        try await s.close()
        _ = held
    }
}

