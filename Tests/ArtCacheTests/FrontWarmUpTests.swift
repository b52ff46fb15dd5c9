@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheServer
@testable import ArtCacheServiceGrammar
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Testing

/// A ring of `serve` nodes warmed through its front door (issue 38):
/// `[service] front_url` sends a manifest's warm-ups to the front, so the
/// node that owns each source stores it; `prefetch --via` does the same from
/// the CLI; the front is the operator's endpoint (no address policy).
@Suite("Ring: warm-ups through the front door", .timeLimit(.minutes(3)))
struct FrontWarmUpTests {
    static let chrome = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"

    /// Three nodes, one origin, a front that routes by source (the last path
    /// segment, as scripts/scale-out's nginx does). A manifest posted to one
    /// node: each item's first request through the front is a hit, and the
    /// origin was asked once per item (by its owner only).
    @Test func aManifestPostedToOneNodeWarmsTheOwnerOfEachItem() async throws {
        let origin = try await OriginServer.start()
        let names = (1...6).map { "ring\($0).jpg" }
        for name in names {
            origin.register(name, .init(body: try Fixtures.image(width: 64, height: 48, suffix: ".jpg"), contentType: "image/jpeg"))
        }
        let ports = Locked<[Int]>([])
        let routed = Locked<[String: Set<Int>]>([:])  // source → the nodes the front sent it to
        try await Self.front(ports: ports, routed: routed).test(.live) { front in
            let frontURL = "http://127.0.0.1:\(front.port!)"
            let dirs = (0..<3).map { _ in TempDir() }
            var opened: [ThumbnailService] = []
            for dir in dirs {
                let pipeline = try await Fixtures.pipeline(dir.path) {
                    $0.service.keys = [ServiceHarness.key]
                    $0.service.frontURL = frontURL
                    $0.service.timeout = 150
                }
                var logger = Logger(label: "artcache.test.ring")
                logger.logLevel = .warning
                opened.append(try await ThumbnailService(pipeline: pipeline, logger: logger, cancelOnDisconnect: true, healthMaxAge: .zero))
            }
            let services = opened
            let signer = ServiceURLSigner(settings: services[0].pipeline.configuration.service)
            try await buildApplication(service: services[0]).test(.live) { node0 in
                try await buildApplication(service: services[1]).test(.live) { node1 in
                    try await buildApplication(service: services[2]).test(.live) { node2 in
                        ports.withLock { $0 = [node0.port!, node1.port!, node2.port!] }
                        let body = Array(names.map { origin.url("/img/" + $0) }.joined(separator: "\n").utf8)
                        // Through a client that waits as long as the service does: a
                        // loaded run may hold the request at admission.
                        let posted = try await HTTPGet.send("http://127.0.0.1:\(node0.port!)/v1/manifest?sizes=48x48", method: "POST",
                                                            headers: signer.manifestHeaderLines(body, query: "sizes=48x48"),
                                                            body: Data(body))
                        #expect(posted.status == 200, "\(posted.status) \(String(decoding: posted.body, as: UTF8.self))")
                        let manifest = try JSONDecoder().decode(ImageManifest.self, from: posted.body)
                        #expect(manifest.items.map(\.status) == Array(repeating: .pending, count: names.count))
                        // The warm-up jobs wait for each answer of the front: once
                        // they are done, every owner has answered.
                        await services[0].pipeline.background.waitUntilIdle(.warmUp)
                        for (item, name) in zip(manifest.items, names) {
                            let path = try #require(item.variants["48x48"]?["1x"]?.path)
                            let answer = try await HTTPGet.get(frontURL + path, headers: ["Accept": Self.chrome])
                            #expect(answer.status == 200, "\(name)")
                            #expect(["memory", "disk"].contains(answer.headers["x-artcache-source"] ?? ""),
                                    "\(name): the first request through the front was \(answer.headers["x-artcache-source"] ?? "-")")
                            #expect(origin.requestCount("/img/" + name) == 1, "\(name): stored once, by its owner")
                        }
                        // Each source went to one node (the front's own record).
                        #expect(routed.withLock { $0.values.allSatisfy { $0.count == 1 } })
                        #expect(routed.withLock { $0.count } == names.count)
                    }
                }
            }
            for service in services { try await service.pipeline.close() }
        }
        origin.stop()
    }

    /// `prefetch --via`: the CLI warms a node through its URL (a one-node
    /// ring: its own front door); the CLI opens no cache of its own, and the
    /// node answers the configured sizes from its cache afterwards.
    @Test func prefetchViaWarmsTheNodeNotTheLocalCache() async throws {
        let s = try await ServiceHarness(live: true)
        let names = ["via1.jpg", "via2.jpg", "via3.jpg"]
        for name in names { try s.register(name) }
        let work = TempDir()
        let local = work.file("cache")
        let list = work.write("urls.txt", names.map { s.origin.url("/img/" + $0) }.joined(separator: "\n"))
        try await s.app().test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            // The CLI waits as long as the node does (ServiceHarness: 150 s): in
            // a loaded run a low-priority render may wait past the default 30 s.
            let environment = ["ARTCACHE_SERVICE_KEYS": CacheKey.hex(ServiceHarness.key), "ARTCACHE_THUMBNAILS_SIZES": "40x40",
                               "ARTCACHE_SERVICE_TIMEOUT": "150"]
            let result = try await CLI.run(["prefetch", "--cache-dir", local, "--via", base + "/", "--json", list],
                                           environment: environment)
            #expect(result.status == 0, "\(result.stderr)")
            let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
            #expect((report.via, report.requested, report.warmed, report.failed) == (base, 3, 3, 0), "\(result.stdout)")
            #expect(!FileManager.default.fileExists(atPath: local), "--via opens no local cache")
            for name in names {
                #expect(s.origin.requestCount("/img/" + name) == 1)
                let path = try s.path("/img/" + name, "40x40")
                let answer = try await HTTPGet.get(base + path, headers: ["Accept": Self.chrome])
                #expect(answer.status == 200)
                #expect(["memory", "disk"].contains(answer.headers["x-artcache-source"] ?? ""), "\(name)")
            }
            // Without keys it cannot sign: a clear error, nothing sent.
            let unsigned = try await CLI.run(["prefetch", "--cache-dir", local, "--via", base, list])
            #expect(unsigned.status != 0 && unsigned.stderr.contains("keys"), "\(unsigned.stderr)")
            let bad = try await CLI.run(["prefetch", "--via", "ftp://front", list], environment: environment)
            #expect(bad.status != 0 && bad.stderr.contains("--via"), "\(bad.stderr)")
        }
        #expect(s.origin.requestCount("/img/via1.jpg") == 1)
        try await s.close()
    }

    /// The front is the operator's endpoint: reached on loopback though the
    /// origin policy refuses loopback, with the `Accept` asked for; an
    /// origin fetch of the same URL is still refused.
    @Test func theFrontIsReachedWhereOriginsAreRefused() async throws {
        let origin = try await OriginServer.start()
        origin.register("e.jpg", .init(body: try Fixtures.image(width: 20, height: 20, suffix: ".jpg"), contentType: "image/jpeg"))
        var settings = DownloadSettings()
        settings.retries = 0
        let downloader = try Downloader(settings: settings)  // default policy: loopback refused
        defer { downloader.shutdown() }
        await #expect(throws: DownloadError.self) { _ = try await downloader.fetch(origin.url("/img/e.jpg")) }
        let answer = try await downloader.getEndpoint(origin.url("/img/e.jpg"), accept: "image/webp,*/*", timeout: 30,
                                                      priority: PriorityHandle(.low))
        #expect(answer.status == 200 && answer.body.count > 0)
        let missing = try await downloader.getEndpoint(origin.url("/img/none.jpg"), accept: nil, timeout: 30, priority: PriorityHandle(.low))
        #expect(missing.status == 404)  // any status comes back, not thrown
        await #expect(throws: DownloadError.self) {
            _ = try await downloader.getEndpoint("ftp://127.0.0.1/x", accept: nil, timeout: 5, priority: PriorityHandle(.low))
        }
        origin.stop()
    }

    /// A node holds a warm-up at admission and sends nothing until its render
    /// is done: the endpoint's deadline decides, not the origins' low-speed
    /// rule (CI once cut `prefetch --via` after 20 silent seconds of a 150 s
    /// timeout). Past the deadline the request is still cut, typed.
    @Test func anEndpointSilentPastTheLowSpeedTimeIsWaitedForUntilItsDeadline() async throws {
        let origin = try await OriginServer.start()
        origin.register("slow.jpg", .init(body: try Fixtures.image(width: 20, height: 20, suffix: ".jpg"), contentType: "image/jpeg"))
        var settings = DownloadSettings()
        settings.lowSpeedLimit = 100_000
        settings.lowSpeedTime = 1
        let downloader = try Downloader(settings: settings)
        defer { downloader.shutdown() }
        let answer = try await downloader.getEndpoint(origin.url("/hold/2500/slow.jpg"), accept: nil, timeout: 60,
                                                      priority: PriorityHandle(.low))
        #expect(answer.status == 200 && answer.body.count > 0)
        let clock = ContinuousClock()
        let started = clock.now
        await #expect {
            _ = try await downloader.getEndpoint(origin.url("/hold/20000/slow.jpg"), accept: nil, timeout: 2,
                                                 priority: PriorityHandle(.low))
        } throws: { error in
            (error as? DownloadError)?.code == .timeout
        }
        #expect(clock.now - started < .seconds(15), "cut by its 2 s deadline")
        origin.stop()
    }

    /// `[service] front_url` as kept (known answers), and a bad one is a typed configuration error naming the key.
    @Test func frontURLsAreCheckedAndKept() throws {
        #expect(OperatorEndpoint.url("", allowingPath: true) == "")
        #expect(OperatorEndpoint.url("http://front.internal/", allowingPath: true) == "http://front.internal")
        #expect(OperatorEndpoint.url(" https://ring.example:8443/images/ ", allowingPath: true) == "https://ring.example:8443/images")
        for bad in ["front.internal", "ftp://front", "http://front/?a=1", "http://front/#x", "http://user@front", "http:///x"] {
            #expect(OperatorEndpoint.url(bad, allowingPath: true) == nil, "\(bad)")
        }
        let dir = TempDir()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let file = dir.path + "/cache.conf"
        try "[service]\nfront_url = \"front.internal\"\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect {
            _ = try Configuration.load(path: file, environment: [:])
        } throws: { error in
            (error as? ArtCacheError)?.code == .configuration && "\(error)".contains("service.front_url")
        }
        let fromEnvironment = try Configuration.load(path: nil, environment: ["ARTCACHE_SERVICE_FRONT_URL": "http://ring.test/"])
        #expect(fromEnvironment.service.frontURL == "http://ring.test")
    }

    struct Report: Decodable {
        let via: String
        let requested: Int
        let warmed: Int
        let failed: Int
    }

    /// The test front: forwards GETs to the node its source hashes to
    /// (FNV-1a of the last path segment), with the client's `Accept`.
    static func front(ports: Locked<[Int]>, routed: Locked<[String: Set<Int>]>) -> some ApplicationProtocol {
        let router = Router()
        router.get("**") { request, _ -> Response in
            let path = request.uri.path
            let source = path.split(separator: "/").last.map(String.init) ?? ""
            let nodes = ports.withLock { $0 }
            guard !nodes.isEmpty else { return Response(status: .serviceUnavailable) }
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in source.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            let port = nodes[Int(hash % UInt64(nodes.count))]
            routed.withLock { $0[source, default: []].insert(port) }
            let answer = try await HTTPGet.get("http://127.0.0.1:\(port)\(path)",
                                               headers: request.headers[.accept].map { ["Accept": $0] } ?? [:])
            var headers = HTTPFields()
            for name in ["content-type", "x-artcache-source", "x-artcache-error"] {
                if let value = answer.headers[name], let field = HTTPField.Name(name) { headers[field] = value }
            }
            return Response(status: .init(code: answer.status), headers: headers,
                            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }
}
