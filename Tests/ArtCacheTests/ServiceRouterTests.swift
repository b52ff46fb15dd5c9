@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
@testable import ArtCacheServiceGrammar
@testable import ArtCacheStore
import Foundation
import Hummingbird
import Testing

/// The service's routes (each test on a live server of its own, `.router`):
/// grammar, signatures, negotiation, validators and every error status.
@Suite("Thumbnail service routes", .timeLimit(.minutes(3)))
struct ServiceRouterTests {
    /// `public, max-age=N, stale-while-revalidate=86400` with N what is left
    /// of a day (default_ttl) fetched moments ago.
    static func maxAgeLeftOfADay(_ cacheControl: String?) -> Bool {
        guard let parts = cacheControl?.components(separatedBy: ", "), parts.count == 3, parts[0] == "public",
              parts[2] == "stale-while-revalidate=86400", parts[1].hasPrefix("max-age="),
              let seconds = Int(parts[1].dropFirst("max-age=".count)) else { return false }
        return (86400 - 60...86400).contains(seconds)
    }

    @Test func thumbnailWithCachingHeadersThen304() async throws {
        let s = try await ServiceHarness()
        try s.register("a.jpg", width: 400, height: 300)
        let path = try s.path("/img/a.jpg", "100x100,fit=cover,f=jpeg")
        try await s.app().test(.router) { client in
            let etag = try await client.execute(uri: path, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/jpeg")
                // No expiry from the origin: what is left of `[cache] default_ttl` (1 d, never
                // cache_max_age's year); no `immutable` (the origin did not say it).
                #expect(Self.maxAgeLeftOfADay(response.headers[.cacheControl]), "\(response.headers[.cacheControl] ?? "none")")
                #expect(response.headers[.lastModified]?.hasSuffix(" GMT") == true)
                #expect(response.headers[.vary] == nil)  // an explicit format is not negotiated
                #expect(response.headers[.artcacheSource] == "network")
                let header = try #require(Fixtures.header(Data(buffer: response.body)))
                #expect(header.width == 100 && header.height == 100)
                return try #require(response.headers[.eTag])
            }
            try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: etag]) { response in
                #expect(response.status == .notModified)
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.eTag] == etag)
            }
            try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: "\"other\", W/\(etag)"]) { response in
                #expect(response.status == .notModified)
            }
            try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: "\"other\""]) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.artcacheSource] == "memory")
            }
        }
        #expect(s.origin.requestCount("/img/a.jpg") == 1)
        try await s.close()
    }

    @Test func autoFormatFollowsAcceptAndVaries() async throws {
        let s = try await ServiceHarness()
        try s.register("a.jpg", width: 200, height: 200)
        let path = try s.path("/img/a.jpg", "100x100")  // [thumbnails] format = auto
        let cold = try await s.app().test(.router) { client in
            var cold: Set<String> = []
            for accept in ["image/avif,image/webp,*/*", "image/webp,*/*", "image/avif;q=0,image/webp", "*/*", nil] {
                // The format policy's cold answer (Format policy tests check the policy itself).
                let choice = s.service.formats.choice(s.service.accepts.accepted(accept), size: ImageSize(100))
                let type = ServiceUpgradeTests.mime(choice.cold)
                cold.insert(type)
                let headers: HTTPFields = accept.map { [.accept: $0] } ?? [:]
                try await client.execute(uri: path, method: .get, headers: headers) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == type, "Accept: \(accept ?? "none")")
                    #expect(response.headers[.vary] == "Accept, Save-Data")
                    #expect(Sniffer.sniff(Data(buffer: response.body)).mimeType == type)
                }
            }
            return cold
        }
        #expect(cold.contains("image/jpeg") && cold.count >= 2, "browsers and old clients differ")
        // Each cold format is its own stored variant (an upgrade kept in another format adds one); one download.
        await s.pipeline.waitForUpgrades()
        let stats = try await s.pipeline.stats()
        #expect(stats.variants >= cold.count && stats.variants <= cold.count + s.pipeline.upgradeCounts.kept)
        #expect(s.origin.requestCount("/img/a.jpg") == 1)
        try await s.close()
    }

    @Test func originalsArePassedThroughAsStoredAndPresetsApply() async throws {
        let s = try await ServiceHarness { $0.presets = ["avatar": ThumbnailOptions(size: .init(32), fit: .cover, format: .png)] }
        let bytes = try Fixtures.image(width: 80, height: 60, suffix: ".png")
        s.origin.register("a.png", .init(body: bytes, contentType: "application/octet-stream"))  // wrong type, repaired
        try await s.app().test(.router) { client in
            try await client.execute(uri: try s.path("/img/a.png"), method: .get) { response in
                #expect(response.status == .ok)
                #expect(Data(buffer: response.body) == bytes)
                #expect(response.headers[.contentType] == "image/png")
            }
            try await client.execute(uri: try s.path("/img/a.png", "p=avatar"), method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/png")
                let header = try #require(Fixtures.header(Data(buffer: response.body)))
                #expect(header.width == 32 && header.height == 32)
            }
        }
        try await s.close()
    }

    @Test func refusalsBeforeAnyFetch() async throws {
        let s = try await ServiceHarness()
        try s.register("a.jpg")
        let good = try s.path("/img/a.jpg", "100x100")
        let parts = good.split(separator: "/", omittingEmptySubsequences: false)
        let source = ServiceURLSigner.encodeSource(s.origin.url("/img/a.jpg"))
        func signed(_ options: String, _ source: String) -> String {
            let rest = "/\(options)/\(source)"
            return "/" + s.signer.signature(for: rest)! + rest
        }
        let cases: [(String, Int, String)] = [
            ("/\(parts[1])/200x200/\(parts[3])", 403, "bad_signature"),                       // options changed
            ("/AAAA/100x100/\(source)", 403, "bad_signature"),
            ("/unsafe/100x100/\(source)", 403, "unsigned_refused"),                             // unsigned not allowed
            (ServiceURLSigner(keys: [[UInt8](repeating: 1, count: 32)]).path(for: s.origin.url("/img/a.jpg")), 403, "bad_signature"),
            (signed("100x100,zoom=2", source), 400, "invalid_options"),
            (signed("100x100,q=0", source), 400, "invalid_options"),
            (signed("5000x5000", source), 400, "invalid_options"),                              // over max_output
            (signed("p=nope", source), 400, "invalid_options"),
            (signed("fit=cover", source), 400, "invalid_options"),
            (signed("100x100", "not*base64"), 400, "invalid_source"),
            (signed("100x100", ServiceURLSigner.encodeSource("ftp://example.com/a.jpg")), 400, "invalid_url"),
            (signed("100x100", ServiceURLSigner.encodeSource("http://user:pw@127.0.0.1/a.jpg")), 400, "invalid_url"),
            ("/just/two", 404, "not_found"),
        ]
        try await s.app().test(.router) { client in
            for (path, status, reason) in cases {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status.code == status, "\(path)")
                    #expect(response.headers[.artcacheError] == reason, "\(path)")
                    #expect(response.headers[.cacheControl] == "no-store")
                    // One line: the status and reason, and for options which token and why.
                    let body = String(buffer: response.body)
                    #expect(body.hasPrefix("\(status) \(reason)") && body.hasSuffix("\n") && body.filter { $0 == "\n" }.count == 1, "\(body)")
                    #expect(reason != "invalid_options" || body.count > "400 invalid_options\n".count, "names the token: \(body)")
                }
            }
        }
        #expect(s.origin.totalRequests == 0)
        try await s.close()
    }

    @Test func originAndImageFailuresMapToStatuses() async throws {
        let s = try await ServiceHarness {
            $0.download.retries = 0
            $0.download.maxBodyBytes = 100_000
            $0.download.timeout = 3
        }
        try s.register("a.jpg")
        s.origin.register("big.png", .init(body: Fixtures.pngLike(size: 300_000), contentType: "image/png"))
        s.origin.register("bomb.png", .init(body: Fixtures.pngBomb(width: 60_000, height: 60_000), contentType: "image/png"))
        let cases: [(String, String, Int, String)] = [
            ("/status/404", "100x100", 404, "http_404"),
            ("/status/500", "100x100", 502, "http_500"),
            ("/html200", "100x100", 422, "not_an_image"),
            ("/img/big.png", "original", 413, "too_large"),
            ("/img/bomb.png", "100x100", 413, "too_large"),
            ("/hold/10000/a.jpg", "100x100", 504, "timeout"),
            ("/loop", "100x100", 502, "too_many_redirects"),
        ]
        try await s.app().test(.router) { client in
            for (originPath, options, status, reason) in cases {
                try await client.execute(uri: try s.path(originPath, options), method: .get) { response in
                    #expect(response.status.code == status, "\(originPath)")
                    #expect(response.headers[.artcacheError] == reason, "\(originPath)")
                }
            }
        }
        try await s.close()
    }

    @Test func blockedSourcesAre403AndNeverReachTheOrigin() async throws {
        // loopback not allowed: the origin itself is an internal address
        let blocked = try await ServiceHarness { $0.download.allowedNetworks = [] }
        try blocked.register("a.jpg")
        // allowed_sources: only another host; a redirect hop to a refused host is not followed
        let listed = try await ServiceHarness { $0.download.allowedSources = [HostPattern("images.example")!] }
        try listed.register("a.jpg")
        try await blocked.app().test(.router) { client in
            try await client.execute(uri: try blocked.path("/img/a.jpg", "100x100"), method: .get) { response in
                #expect(response.status == .forbidden)
                #expect(response.headers[.artcacheError] == "blocked_address")
                #expect(!String(buffer: response.body).contains("127.0.0.1"))
            }
        }
        try await listed.app().test(.router) { client in
            try await client.execute(uri: try listed.path("/img/a.jpg", "100x100"), method: .get) { response in
                #expect(response.status == .forbidden)
                #expect(response.headers[.artcacheError] == "blocked_source")
            }
        }
        #expect(blocked.origin.totalRequests == 0 && listed.origin.totalRequests == 0)
        try await blocked.close()
        try await listed.close()
    }

    @Test func redirectToAHostNotAllowedIsNotFollowed() async throws {
        // 127.0.0.1 is listed; the redirect goes to "localhost", which is not
        let s = try await ServiceHarness { $0.download.allowedSources = [HostPattern("127.0.0.1")!] }
        try s.register("a.jpg")
        try await s.app().test(.router) { client in
            try await client.execute(uri: try s.path("/elsewhere/localhost:\(s.origin.port)/a.jpg"), method: .get) { response in
                #expect(response.status == .forbidden)
                #expect(response.headers[.artcacheError] == "blocked_source")
            }
            try await client.execute(uri: try s.path("/redirect/2/a.jpg"), method: .get) { response in
                #expect(response.status == .ok)  // same-host hops are fine
            }
        }
        #expect(s.origin.requestCount("/img/a.jpg") == 1)  // only the allowed chain reached the image
        try await s.close()
    }

    @Test func fallbackImageOrPlaceholderNamesTheError() async throws {
        let dir = TempDir()
        let file = dir.path + "/fallback.png"
        let fallbackBytes = try Fixtures.image(width: 10, height: 10, suffix: ".png")
        try fallbackBytes.write(to: URL(fileURLWithPath: file))
        let withFile = try await ServiceHarness { $0.service.fallback = file }
        let withPlaceholder = try await ServiceHarness { $0.service.fallback = "placeholder" }
        try await withFile.app().test(.router) { client in
            try await client.execute(uri: try withFile.path("/status/404", "100x100"), method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.artcacheError] == "http_404")
                #expect(response.headers[.cacheControl] == "no-store")
                #expect(Data(buffer: response.body) == fallbackBytes)
            }
        }
        try await withPlaceholder.app().test(.router) { client in
            try await client.execute(uri: try withPlaceholder.path("/html200", "120x90,f=png"), method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.artcacheError] == "not_an_image")
                #expect(response.headers[.artcacheSource] == "placeholder")
                let header = try #require(Fixtures.header(Data(buffer: response.body)))
                #expect(header.width == 120 && header.height == 90)
            }
            // a bad signature is not an image failure: no fallback
            try await client.execute(uri: "/AAAA/100x100/aGk", method: .get) { response in
                #expect(response.status == .forbidden)
            }
        }
        try await withFile.close()
        try await withPlaceholder.close()
    }

    @Test func serviceDeadlineIs503() async throws {
        let s = try await ServiceHarness { $0.service.timeout = 0.3 }
        try s.register("a.jpg")
        try await s.app().test(.router) { client in
            try await client.execute(uri: try s.path("/gate/a.jpg", "100x100"), method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.artcacheError] == "service_timeout")
                // The work goes on behind it, bounded by [download] timeout (60 s).
                #expect(response.headers[.retryAfter] == "60")
            }
        }
        s.origin.openGate()
        try await s.close()
    }

    @Test func startupRefusesUnsafeSettings() async throws {
        let dir = TempDir()
        func open(_ configure: @escaping (inout Configuration) -> Void) async throws -> ArtCacheError? {
            let pipeline = try await Fixtures.pipeline(dir.path, configure)
            defer { Task { try? await pipeline.close() } }
            do {
                _ = try await ThumbnailService(pipeline: pipeline, logger: .init(label: "t"))
                return nil
            } catch {
                return error
            }
        }
        #expect(try await open { _ in }?.code == .configuration)  // no keys
        #expect(try await open { $0.service.allowUnsigned = true; $0.service.host = "0.0.0.0" }?.code == .configuration)
        #expect(try await open { $0.service.fallback = "/nonexistent.png"; $0.service.keys = [ServiceHarness.key] }?.code == .configuration)
        #expect(try await open { $0.service.allowUnsigned = true } == nil)  // loopback listener
    }

    @Test func unsignedOnLoopbackWhenAllowed() async throws {
        let s = try await ServiceHarness { $0.service.keys = []; $0.service.allowUnsigned = true }
        try s.register("a.jpg")
        let path = try s.path("/img/a.jpg", "50x50")
        #expect(path.hasPrefix("/unsafe/50x50/"))
        try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get) { response in
                #expect(response.status == .ok)
                // Not immutable when unsigned.
                #expect(Self.maxAgeLeftOfADay(response.headers[.cacheControl]), "\(response.headers[.cacheControl] ?? "none")")
            }
        }
        try await s.close()
    }

    /// `/health` is unauthenticated: a flood of it runs the pipeline's check
    /// (an index read and a render) once per `maxAge`, never a render per
    /// request ahead of image requests.
    @Test func healthIsCheckedOncePerMaxAgeWhateverTheRate() async throws {
        let s = try await ServiceHarness(healthMaxAge: .seconds(600))
        let rendersBefore = s.pipeline.renderer.activity.started  // the service's start probes AVIF once
        try await s.app().test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        try await client.execute(uri: "/health", method: .get) { #expect($0.status == .ok) }
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(s.service.health.checks == 1)
        #expect(s.pipeline.renderer.activity.started - rendersBefore == 1, "one 1x1 render for 100 requests")
        try await s.close()
    }

    @Test func healthAndMetrics() async throws {
        let s = try await ServiceHarness()
        try s.register("a.jpg")
        try await s.app().test(.router) { client in
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "ok\n")
            }
            try await client.execute(uri: try s.path("/img/a.jpg", "40x40"), method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: try s.path("/img/a.jpg", "40x40"), method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/AAAA/40x40/aGk", method: .get) { #expect($0.status == .forbidden) }
            try await client.execute(uri: "/metrics", method: .get) { response in
                let text = String(buffer: response.body)
                // /health's 200 is counted too: every answer is.
                for line in ["artcache_http_requests_total{status=\"200\"} 3", "artcache_http_requests_total{status=\"403\"} 1",
                             "artcache_images_total{tier=\"network\"} 1", "artcache_images_total{tier=\"memory\"} 1",
                             "artcache_refusals_total{reason=\"bad_signature\"} 1", "artcache_downloads_in_progress 0",
                             "artcache_queue_depth 0", "artcache_http_request_duration_seconds_count{tier=\"network\"} 1"] {
                    #expect(text.contains(line), "\(line)")
                }
                #expect(text.contains("artcache_bytes_served_total"))
                // The render pool's hand-offs: the health check's 1x1 and the 40x40 at least, never more wake-ups than jobs.
                func total(_ name: String) -> Int? {
                    text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
                }
                let jobs = try #require(total("artcache_render_jobs_total"))
                let wakeups = try #require(total("artcache_render_wakeups_total"))
                #expect(jobs >= 2 && wakeups <= jobs, "\(jobs) jobs, \(wakeups) wake-ups")
            }
        }
        try await s.close()
        // a closed store is not healthy
        try await s.app().test(.router) { client in
            try await client.execute(uri: "/health", method: .get) { #expect($0.status == .serviceUnavailable) }
        }
    }
}
