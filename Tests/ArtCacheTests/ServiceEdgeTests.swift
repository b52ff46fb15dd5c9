@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCacheServer
@testable import ArtCacheServiceGrammar
import Foundation
import Testing

/// Issue 49 items 2, 5 and 9, as a client of `artcache serve` meets them:
/// every method and status answered honestly and counted, one spelling per
/// signed path, manifest requests signed whole with an expiry, and the
/// open-file limit fitted at start.
@Suite("Thumbnail service at the edges", .timeLimit(.minutes(3)))
struct ServiceEdgeTests {
    static let keyHex = String(repeating: "cd", count: 32)
    static let signer = ServiceURLSigner(keys: [[UInt8](repeating: 0xCD, count: 32)])

    /// A `serve` process on a cache of its own; its port.
    struct Served {
        let process: Child
        let out: Pipe
        let err: Pipe
        let port: Int
        var base: String { "http://127.0.0.1:\(port)" }

        static func start(_ dir: TempDir, environment: [String: String] = [:], shell: String? = nil) async throws -> Served {
            var env = ["ARTCACHE_SERVICE_KEYS": ServiceEdgeTests.keyHex]
            env.merge(environment) { $1 }
            let arguments = ["serve", "--listen", "127.0.0.1:0", "--cache-dir", dir.file("c")]
            let (process, out, err) = if let shell {
                // Under a shell that sets a limit first (`ulimit -n 256; exec artcache serve …`).
                try CLI.start(["-c", shell + "; exec \"$0\" \"$@\"", CLI.binary] + arguments, environment: env, executable: "/bin/sh")
            } else {
                try CLI.start(arguments, environment: env)
            }
            let line = try await CLI.firstLine(out)
            let port = try #require(line.split(separator: ":").last.flatMap { Int($0) }, "\(line)")
            return Served(process: process, out: out, err: err, port: port)
        }

        /// SIGTERM, then its standard error.
        func stop() async -> String {
            process.terminate()
            return await CLI.exit(process, out, err).stderr
        }
    }

    /// The value of the series `name{labels}` in a Prometheus text (nil when absent).
    static func series(_ text: String, _ name: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    @Test func everyMethodAndStatusIsAnsweredCountedAndLogged() async throws {
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        origin.register("a.jpg", .init(body: try Fixtures.image(width: 90, height: 90, suffix: ".jpg"), contentType: "image/jpeg",
                                       headers: ["Last-Modified": "Tue, 03 Mar 2026 10:00:00 GMT"]))
        origin.register("b.jpg", .init(body: try Fixtures.image(width: 90, height: 90, suffix: ".jpg"), contentType: "image/jpeg",
                                       headers: ["Last-Modified": "Fri, 01 Jan 2100 00:00:00 GMT"]))
        let dir = TempDir()
        let served = try await Served.start(dir)
        // Every counter is there from the start, at 0.
        let before = try await HTTPGet.get(served.base + "/metrics")
        let first = String(decoding: before.body, as: UTF8.self)
        for name in ["artcache_shed_total{class=\"low\"}", "artcache_shed_total{class=\"high\"}",
                     "artcache_http_requests_total{status=\"404\"}", "artcache_http_requests_total{status=\"405\"}",
                     "artcache_refusals_total{reason=\"unexpected_query\"}", "artcache_images_total{tier=\"network\"}"] {
            #expect(Self.series(first, name) == 0, "\(name) at 0 from the start")
        }
        // GET, then HEAD: the same status and headers, no body.
        let path = Self.signer.path(for: origin.url("/img/a.jpg"), options: ThumbnailOptions(size: .init(40), format: .jpeg))
        let image = try await HTTPGet.get(served.base + path)
        #expect(image.status == 200 && image.body.count > 0)
        let head = try await HTTPGet.send(served.base + path, method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(head.headers["content-length"] == String(image.body.count))
        #expect(head.headers["etag"] == image.headers["etag"] && head.headers["content-type"] == "image/jpeg")
        for endpoint in ["/health", "/metrics", Self.signer.infoPath(for: origin.url("/img/a.jpg"))] {
            let answer = try await HTTPGet.send(served.base + endpoint, method: "HEAD")
            #expect(answer.status == 200 && answer.body.isEmpty, "HEAD \(endpoint): \(answer.status)")
        }
        // Last-Modified: the origin's; one in the future is never later than Date.
        #expect(image.headers["last-modified"] == "Tue, 03 Mar 2026 10:00:00 GMT")
        let future = try await HTTPGet.get(served.base + Self.signer.path(for: origin.url("/img/b.jpg"),
                                                                         options: ThumbnailOptions(size: .init(40), format: .jpeg)))
        let modified = try #require(future.headers["last-modified"].flatMap { HTTPDate.parse($0) })
        let date = try #require(future.headers["date"].flatMap { HTTPDate.parse($0) })
        #expect(modified <= date, "Last-Modified \(modified) after Date \(date)")
        // Paths and methods it does not serve: 404 and 405 with Allow.
        let missing = try await HTTPGet.get(served.base + "/nope")
        #expect(missing.status == 404 && missing.headers["x-artcache-error"] == "not_found")
        let post = try await HTTPGet.send(served.base + "/health", method: "POST")
        #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD", "\(post.status) \(post.headers)")
        let getManifest = try await HTTPGet.get(served.base + "/v1/manifest")
        #expect(getManifest.status == 405 && getManifest.headers["allow"] == "POST")
        let deleteImage = try await HTTPGet.send(served.base + path, method: "DELETE")
        #expect(deleteImage.status == 405 && deleteImage.headers["allow"] == "GET, HEAD")
        // One spelling per signed path: padding, a query.
        let segments = path.split(separator: "/").map(String.init)
        let padded = "/\(segments[0])=/\(segments[1])/\(segments[2])"
        let paddedAnswer = try await HTTPGet.get(served.base + padded)
        #expect(paddedAnswer.status == 403 && paddedAnswer.headers["x-artcache-error"] == "bad_signature", "\(padded)")
        let queried = try await HTTPGet.get(served.base + path + "?x=1")
        #expect(queried.status == 400 && queried.headers["x-artcache-error"] == "unexpected_query")
        #expect(try await HTTPGet.get(served.base + path + "?").status == 400)
        // A bad option names its token and why.
        let rest = "/40x40,fit=bogus/" + ServiceURLSigner.encodeSource(origin.url("/img/a.jpg"))
        let bad = try await HTTPGet.get(served.base + "/" + Self.signer.signature(for: rest)! + rest)
        let text = String(decoding: bad.body, as: UTF8.self)
        #expect(bad.status == 400 && text.hasPrefix("400 invalid_options: ") && text.contains("fit must be one of"), "\(text)")
        // All of it counted, by status, and in the access log.
        let after = String(decoding: try await HTTPGet.get(served.base + "/metrics").body, as: UTF8.self)
        #expect(Self.series(after, "artcache_http_requests_total{status=\"404\"}") == 1)
        #expect(Self.series(after, "artcache_http_requests_total{status=\"405\"}") == 3)
        #expect(Self.series(after, "artcache_http_requests_total{status=\"400\"}") == 3)
        #expect(Self.series(after, "artcache_http_requests_total{status=\"403\"}") == 1)
        let log = await served.stop()
        #expect(served.process.terminationStatus == 0)
        for expected in ["path=/nope", "status=404", "method=POST", "status=405", "method=HEAD", "error=unexpected_query"] {
            #expect(log.contains(expected), "the access log has \(expected)")
        }
    }

    /// A manifest request's signature covers its method, path, query, body
    /// and expiry: the same request with other sizes, replayed after its
    /// expiry, or with an expiry too far ahead, is refused;
    /// `artcache sign --manifest` prints headers and a curl line that work.
    @Test func aManifestSignatureCoversTheWholeRequestAndExpires() async throws {
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        origin.register("a.jpg", .init(body: try Fixtures.image(width: 90, height: 60, suffix: ".jpg"), contentType: "image/jpeg"))
        let dir = TempDir()
        let served = try await Served.start(dir)
        let body = Data(origin.url("/img/a.jpg").utf8)
        let file = dir.write("set.txt", String(decoding: body, as: UTF8.self))
        let signed = try await CLI.run(["sign", "--manifest", file, "--sizes", "48x48", "--base", served.base],
                                       environment: ["ARTCACHE_SERVICE_KEYS": Self.keyHex])
        #expect(signed.status == 0, "\(signed.stderr)")
        let lines = signed.stdout.split(separator: "\n").map(String.init)
        let headers = Dictionary(uniqueKeysWithValues: lines.prefix(2).compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        })
        let expires = try #require(headers["X-ArtCache-Expires"].flatMap { Int($0) })
        #expect(abs(Double(expires) - Date().timeIntervalSince1970 - 300) < 30, "now + manifest_signature_max_age (5 min)")
        #expect(lines.count == 3 && lines[2].hasPrefix("curl ") && lines[2].contains("/v1/manifest?sizes=48x48"))
        // The printed curl line, run as it is.
        let curl = try await CLI.run(["-c", lines[2]], executable: "/bin/sh")
        #expect(curl.status == 0 && curl.stdout.contains("\"48x48\""), "\(curl.stdout) \(curl.stderr)")
        // Replayed with other sizes: refused.
        let url = served.base + "/v1/manifest?sizes="
        let replayed = try await HTTPGet.send(url + "600x600", method: "POST", headers: headers, body: body)
        #expect(replayed.status == 403 && replayed.headers["x-artcache-error"] == "bad_signature")
        #expect(try await HTTPGet.send(url + "48x48", method: "POST", headers: headers, body: body).status == 200)
        // Without an expiry; past it; too far ahead.
        var noExpiry = headers
        noExpiry["X-ArtCache-Expires"] = nil
        let missing = try await HTTPGet.send(url + "48x48", method: "POST", headers: noExpiry, body: body)
        #expect(missing.status == 401 && missing.headers["x-artcache-error"] == "missing_expires")
        for (offset, reason) in [(-10, "signature_expired"), (3600, "expires_too_far")] {
            let at = Int(Date().timeIntervalSince1970) + offset
            let signature = Self.signer.signature(method: "POST", path: "/v1/manifest", query: "sizes=48x48", expires: at,
                                                  body: Array(body))!
            let answer = try await HTTPGet.send(url + "48x48", method: "POST",
                                                headers: ["X-ArtCache-Signature": signature, "X-ArtCache-Expires": String(at)],
                                                body: body)
            #expect(answer.status == 403 && answer.headers["x-artcache-error"] == reason, "\(offset): \(answer.status)")
        }
        _ = await served.stop()
    }

    /// More idle connections than the soft open-file limit: serve raised
    /// it to the hard one (`ulimit -Sn 200`: nothing to say, and `/health`
    /// answers); where the hard limit is low too (`ulimit -n 256` with the
    /// default `max_connections = 4096`), it says once that it lowered
    /// `max_connections`, and `/health` still answers as idle ones time out.
    @Test(arguments: [("ulimit -Sn 200", false), ("ulimit -n 256", true)])
    func serveFitsMaxConnectionsUnderTheOpenFileLimit(_ shell: String, lowered: Bool) async throws {
        let dir = TempDir()
        let served = try await Served.start(dir, environment: ["ARTCACHE_SERVICE_IDLE_TIMEOUT": "1s"], shell: shell)
        var idle: [Int32] = []
        defer { for fd in idle { close(fd) } }
        for _ in 0..<300 { idle.append(try connectLoopback(port: served.port, timeout: 10)) }
        let health = try await HTTPGet.get(served.base + "/health")
        #expect(health.status == 200, "\(shell)")
        for fd in idle { close(fd) }
        idle = []
        let log = await served.stop()
        let warnings = log.split(separator: "\n").filter { $0.contains("max_connections lowered") }
        #expect(warnings.count == (lowered ? 1 : 0), "\(shell): \(log.suffix(2000))")
        if lowered {
            #expect(warnings.first?.contains("from 4096 to") == true && warnings.first?.contains("limit is 256") == true)
        }
    }

    @Test func maxConnectionsFitsTheLimitLessTheCachesShare() {
        let reserve = DescriptorLimit.reserve(downloads: 32)
        #expect(DescriptorLimit.fitted(maxConnections: 4096, limit: 1024, downloads: 32).maxConnections == 1024 - reserve)
        #expect(DescriptorLimit.fitted(maxConnections: 100, limit: 1024, downloads: 32) == .init(limit: 1024, maxConnections: 100))
        #expect(DescriptorLimit.fitted(maxConnections: 4096, limit: 10, downloads: 32).maxConnections == 1)
    }
}
