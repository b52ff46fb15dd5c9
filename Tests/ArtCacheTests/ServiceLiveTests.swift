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
import ServiceLifecycle
import Testing

/// The service on a real socket (127.0.0.1, port 0): address refusals,
/// overload, client disconnects, graceful shutdown, sharing the cache with
/// CLI commands, and `artcache serve` itself.
@Suite("Thumbnail service, live", .timeLimit(.minutes(3)))
struct ServiceLiveTests {
    @Test func internalSourcesAreRefusedWhateverTheSpelling() async throws {
        let s = try await ServiceHarness(live: true) { $0.download.allowedNetworks = [] }
        try s.register("a.jpg")
        let port = s.origin.port
        let sources = ["http://127.0.0.1:\(port)/img/a.jpg", "http://2130706433:\(port)/img/a.jpg", "http://0x7f.1:\(port)/img/a.jpg",
                       "http://[::ffff:127.0.0.1]:\(port)/img/a.jpg", "http://localhost:\(port)/img/a.jpg",
                       "http://127.1:\(port)/img/a.jpg", "http://017700000001:\(port)/img/a.jpg"]
        try await s.app().test(.live) { client in
            for source in sources {
                let path = s.signer.path(for: source, options: try ThumbnailOptions(parsing: "100x100"))
                let answer = try await HTTPGet.get("http://127.0.0.1:\(client.port!)\(path)")
                #expect(answer.status == 403, "\(source)")
                #expect(answer.headers["x-artcache-error"] == "blocked_address", "\(source)")
                #expect(answer.headers["connection"] != "close", "\(source)")
            }
        }
        #expect(s.origin.requestLog.isEmpty)
        try await s.close()
    }

    /// Cold images keep a keep-alive connection: the service watches for
    /// the client leaving through the channel's close future, without
    /// reading the connection. (It used to read it to the end, so every
    /// network miss answered `Connection: close`.) The test client has one
    /// connection: a closed one would fail the next request.
    /// (One keep-alive connection: ``PatientClient``.)
    @Test(.timeLimit(.minutes(3)))
    func aKeepAliveClientKeepsItsConnectionAfterColdImages() async throws {
        let s = try await ServiceHarness(live: true)
        let names = ["a.jpg", "b.jpg", "c.jpg"]
        for name in names { try s.register(name) }
        try await s.app().test(.live) { live in try await PatientClient.with(port: live.port!) { client in
            for name in names {
                let response = try await client.execute(uri: try s.path("/img/\(name)", "40x40"))
                #expect(response.status == .ok, "\(name)")
                #expect(response.headers[.artcacheSource] == "network", "\(name): a cold miss")
                #expect(response.headers[.connection] != "close", "\(name)")
            }
        } }
        #expect(names.allSatisfy { s.origin.requestCount("/img/\($0)") == 1 })
        try await s.close()
    }

    @Test(.timeLimit(.minutes(3)))
    func overloadAnswers429WithRetryAfter() async throws {
        let s = try await ServiceHarness(live: true) {
            $0.service.maxInflight = 1
            $0.service.queue = 1
        }
        for name in ["a.jpg", "b.jpg", "c.jpg"] { try s.register(name) }
        try await s.app().test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            let first = Task { try await HTTPGet.get(base + (try s.path("/gate/a.jpg", "50x50"))) }
            await s.origin.waitForRequest("/gate/a.jpg")
            // One slot busy behind the gate: of two more requests one takes the
            // queue's place and waits, the other is refused at once.
            let paths = [try s.path("/gate/b.jpg", "50x50"), try s.path("/gate/c.jpg", "50x50")]
            try await withThrowingTaskGroup(of: HTTPGet.Answer.self) { group in
                for path in paths { group.addTask { try await HTTPGet.get(base + path) } }
                let refused = try #require(try await group.next())  // the queued one cannot finish before the gate opens
                #expect(refused.status == 429)
                #expect(refused.headers["retry-after"] == "1")
                #expect(refused.headers["x-artcache-error"] == "overloaded")
                s.origin.openGate()
                #expect(try await group.next()?.status == 200)
            }
            #expect(try await first.value.status == 200)
            #expect(s.origin.requestCount("/gate/b.jpg") + s.origin.requestCount("/gate/c.jpg") == 1)
        }
        try await s.close()
    }

    /// Issue 49 item 1: a client that leaves does not throw its download
    /// away — the flight goes on as an `orphaned_flight` job and is stored,
    /// so the next request for it is a hit and the origin is asked once.
    @Test(.timeLimit(.minutes(3)))
    func aClientLeavingLeavesItsWorkToBeFinishedAndStored() async throws {
        let s = try await ServiceHarness(live: true)
        let jpeg = try Fixtures.image(width: 300, height: 300, suffix: ".jpg")
        s.origin.register("big.jpg", .init(body: jpeg, contentType: "image/jpeg"))
        let originPath = "/slow/20/big.jpg"  // a chunk every 20 ms
        let path = try s.path(originPath, "100x100")
        try await s.app().test(.live) { client in
            let fd = try RawHTTP.send(port: client.port!, path: path)
            await s.origin.waitForRequest(originPath)
            close(fd)
            await s.pipeline.background.waitUntilFinished(.orphanedFlight, count: 1)  // the flight, finished behind
            let answer = try await HTTPGet.get("http://127.0.0.1:\(client.port!)" + path)
            #expect(answer.status == 200 && ["memory", "disk"].contains(answer.headers["x-artcache-source"] ?? ""),
                    "\(answer.status) \(answer.headers["x-artcache-source"] ?? "-")")
            #expect(s.origin.requestCount(originPath) == 1, "asked once")
        }
        try await s.close()
    }

    /// Issue 49 item 1: an origin slower than the service's deadline. The
    /// answer at the deadline is 503 with a `Retry-After`; the download goes
    /// on behind it and is stored, so the next request is a hit — the
    /// origin is asked once, not once per try.
    @Test(.timeLimit(.minutes(3)))
    func anOriginSlowerThanTheDeadlineIsFinishedBehindThe503() async throws {
        // The origin holds its answer until the 503 is out (a gate, not a
        // clock); the service's deadline leaves room for the second
        // request, a hit, on a loaded machine.
        let s = try await ServiceHarness(live: true) {
            $0.service.timeout = 5
            $0.download.timeout = 20
        }
        let jpeg = try Fixtures.image(width: 300, height: 300, suffix: ".jpg")
        s.origin.register("late.jpg", .init(body: jpeg, contentType: "image/jpeg"))
        let originPath = "/gate/late.jpg"
        let path = try s.path(originPath, "100x100")
        try await s.app().test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            let first = try await HTTPGet.get(base + path)
            #expect(first.status == 503 && first.headers["x-artcache-error"] == "service_timeout")
            #expect(s.origin.requestCount(originPath) == 1, "the origin holds the one transfer")
            s.origin.openGate()
            #expect(first.headers["retry-after"] == "15", "the transfer's own deadline: 20 s − 5 s")
            await s.pipeline.background.waitUntilFinished(.orphanedFlight, count: 1)
            let metrics = String(decoding: try await HTTPGet.get(base + "/metrics").body, as: UTF8.self)
            #expect(metrics.contains("artcache_background_jobs{kind=\"orphaned_flight\",state=\"running\"} 0"))
            await s.pipeline.store.waitForWritesBehind()
            #expect(try await s.pipeline.stats().variants == 1, "the thumbnail was stored behind the 503")
            let second = try await HTTPGet.get(base + path)
            #expect(second.status == 200 && ["memory", "disk"].contains(second.headers["x-artcache-source"] ?? ""),
                    "\(second.status) \(second.headers["x-artcache-source"] ?? "-")")
            #expect(s.origin.requestCount(originPath) == 1, "asked once")
        }
        try await s.close()
    }

    @Test func gracefulShutdownFinishesInFlightRequestsThenClosesTheCache() async throws {
        // A grace that a slow machine (TSan) cannot run out of: the request
        // in flight must finish, not be cut when the default 10 s are up.
        let s = try await ServiceHarness(live: true) { $0.service.shutdownGrace = 120 }
        try s.register("a.jpg")
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let group = makeServiceGroup(service: s.service, signals: []) { _, port in portSink.yield(port) }
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let inFlight = Task { try await HTTPGet.get("http://127.0.0.1:\(port)" + (try s.path("/gate/a.jpg", "60x60"))) }
        await s.origin.waitForRequest("/gate/a.jpg")
        await group.triggerGracefulShutdown()
        s.origin.openGate()
        let answer = try await inFlight.value
        #expect(answer.status == 200)
        #expect(Fixtures.header(answer.body)?.width == 60)
        try await running.value
        // the pipeline was closed after the request finished
        await #expect(throws: ArtCacheError.self) { try await s.pipeline.checkHealth() }
        #expect(try await ImagePipeline.open(configuration: s.pipeline.configuration).verify(hash: true).problems.isEmpty)
    }

    @Test func serveSharesItsCacheWithPrefetchPurgeAndStats() async throws {
        let s = try await ServiceHarness(live: true)
        let names = (0..<12).map { "s\($0).jpg" }
        for name in names { try s.register(name, width: 120, height: 90) }
        let cache = s.pipeline.configuration.cache.directory
        let list = s.harness.dir.write("urls.txt", names.map { s.origin.url("/img/\($0)") }.joined(separator: "\n") + "\n")
        try await s.app().test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            async let prefetch = CLI.run(["prefetch", list, "--format", "urls", "--cache-dir", cache])
            var statuses: [Int] = []
            for name in names {
                statuses.append(try await HTTPGet.get(base + (try s.path("/img/\(name)", "64x64,f=webp"))).status)
            }
            let prefetched = try await prefetch
            #expect(prefetched.status == 0, "\(prefetched.stderr)")
            let purge = try await CLI.run(["purge", "--all", "--cache-dir", cache])
            #expect(purge.status == 0, "\(purge.stderr)")
            // the service still answers: from its memory tier or by fetching again
            for name in names {
                statuses.append(try await HTTPGet.get(base + (try s.path("/img/\(name)", "32x32"))).status)
            }
            let stats = try await CLI.run(["stats", "--cache-dir", cache, "--json"])
            #expect(stats.status == 0, "\(stats.stderr)")
            #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        }
        let verify = try await s.pipeline.verify(hash: true)
        #expect(verify.problems.isEmpty, "\(verify.problems)")
        try await s.close()
    }

    @Test func serveCommandRunsSignsAndStopsOnSIGTERM() async throws {
        let origin = try await OriginServer.start()
        origin.register("a.jpg", .init(body: try Fixtures.image(width: 90, height: 90, suffix: ".jpg"), contentType: "image/jpeg"))
        let dir = TempDir()
        let environment = ["ARTCACHE_SERVICE_KEYS": String(repeating: "ab", count: 32)]
        let (process, out, err) = try CLI.start(["serve", "--listen", "127.0.0.1:0", "--cache-dir", dir.file("c")],
                                                environment: environment)
        let line = try await CLI.firstLine(out)
        let port = try #require(line.split(separator: ":").last.flatMap { Int($0) }, "\(line)")
        #expect(line.hasPrefix("artcache: serving \(dir.file("c")) on http://127.0.0.1:"))
        let signed = try await CLI.run(["sign", origin.url("/img/a.jpg"), "--size", "40x40", "--fit", "cover", "--format", "png"],
                                 environment: environment)
        #expect(signed.status == 0, "\(signed.stderr)")
        let path = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let library = ServiceURLSigner(keys: [[UInt8](repeating: 0xAB, count: 32)])
            .path(for: origin.url("/img/a.jpg"), options: ThumbnailOptions(size: .init(40), fit: .cover, format: .png))
        #expect(path == library)
        let image = try await HTTPGet.get("http://127.0.0.1:\(port)\(path)")
        #expect(image.status == 200 && image.headers["content-type"] == "image/png")
        #expect(try await HTTPGet.get("http://127.0.0.1:\(port)/health").status == 200)
        // `artcache health --url` asks the same /health: exit 0, "ok".
        let health = try await CLI.run(["health", "--url", "http://127.0.0.1:\(port)"])
        #expect(health.status == 0 && health.stdout == "ok\n", "\(health.stdout) \(health.stderr)")
        process.terminate()  // SIGTERM
        let log = await CLI.exit(process, out, err).stderr
        #expect(process.terminationStatus == 0)
        #expect(log.contains("cache closed"))
        #expect(log.contains("status=200"))  // the access log
        // without keys, serve refuses to start (exit 78: configuration)
        let refused = try await CLI.run(["serve", "--listen", "127.0.0.1:0", "--cache-dir", dir.file("c")])
        #expect(refused.status == 78 && refused.stderr.contains("service.keys"))
        origin.stop()
    }
}

extension CLI {
    /// The first line a child prints on `pipe` (read on a Dispatch thread).
    static func firstLine(_ pipe: Pipe) async throws -> String {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var data = Data()
                while !data.contains(0x0A) {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    data.append(chunk)
                }
                continuation.resume(returning: String(decoding: data.prefix { $0 != 0x0A }, as: UTF8.self))
            }
        }
    }
}
