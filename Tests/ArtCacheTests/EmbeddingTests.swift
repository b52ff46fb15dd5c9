@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// The embedding API (`ImagePipeline.open`, `image`, `task`, `cachedImage`,
/// the prefetcher), against real libcurl, libvips and SQLite and a loopback origin.
@Suite("Embedding API", .timeLimit(.minutes(3)))
struct EmbeddingTests {
    /// A loopback origin serving a 400x300 JPEG under several names.
    static func harness(_ configure: (inout Configuration) -> Void = { _ in }) async throws -> LoopbackHarness {
        let h = try await LoopbackHarness(configure)
        let jpeg = try Self.jpeg()
        for name in ["a.jpg", "b.jpg", "c.jpg"] + (0..<24).map({ "p\($0).jpg" }) {
            h.origin.register(name, .init(body: jpeg, contentType: "image/jpeg", cacheControl: "max-age=3600"))
        }
        return h
    }

    static func jpeg() throws -> Data { try Fixtures.image(width: 400, height: 300, suffix: ".jpg") }

    @Test func opensAndClosesInCodeWithoutAFile() async throws {
        let dir = TempDir()
        var configuration = Configuration()
        configuration.cache.directory = dir.file("cache")
        configuration.memory = MemorySettings(maxBytes: 1_000_000, maxEntries: 10)
        #expect(configuration.file == nil)
        #expect(configuration.download == Configuration.defaults.download)
        #expect(configuration.download.allowedNetworks.isEmpty)  // secure by default: public addresses only
        let pipeline = try await ImagePipeline.open(configuration: configuration)
        #expect(FileManager.default.fileExists(atPath: dir.file("cache/index.sqlite")))
        let stats = try await pipeline.stats()
        #expect(stats.entries == 0 && stats.memory.maxEntries == 10)
        try await pipeline.close()

        var bad = Configuration()
        bad.cache.directory = dir.file("other")
        bad.cache.maxBytes = 0
        let refused = await #expect(throws: ArtCacheError.self) { try await ImagePipeline.open(configuration: bad) }
        #expect(refused?.code == .configuration)
        #expect(refused?.underlying is ConfigError)
        #expect(!FileManager.default.fileExists(atPath: dir.file("other")))  // nothing created
    }

    @Test func everyErrorCodeIsReachableAndTyped() async throws {
        let h = try await Self.harness {
            $0.download.retries = 0
            $0.download.timeout = 3
            $0.download.maxBodyBytes = 200_000
            $0.thumbnails.maxSourcePixels = 1_000_000
        }
        h.origin.register("big.jpg", .init(body: Fixtures.pngLike(size: 300_000), contentType: "image/png"))
        h.origin.register("pdf", .init(body: Data("%PDF-1.4\n%%EOF\n".utf8), contentType: "image/jpeg"))
        h.origin.register("bomb.png", .init(body: Fixtures.pngBomb(width: 30_000, height: 30_000), contentType: "image/png"))
        h.origin.register("cut.jpg", .init(body: try Self.jpeg().prefix(try Self.jpeg().count / 2), contentType: "image/jpeg"))
        h.origin.register("bmp", .init(body: try Fixtures.image(suffix: "magick:bmp"), contentType: "image/bmp"))
        let thumb = { (path: String) in ImageRequest(url: h.url(path), width: 50, height: 50) }
        let cases: [(ImageRequest, ArtCacheError.Code)] = [
            (ImageRequest(url: "ftp://example.invalid/a.jpg"), .invalidURL),
            (ImageRequest(url: h.url("/img/a.jpg"), width: 0, height: 10), .invalidRequest),
            (ImageRequest(url: h.url("/img/a.jpg"), width: 10, height: 10, quality: 101), .invalidRequest),
            (ImageRequest(url: h.url("/img/a.jpg"), width: 99_999, height: 10), .tooLarge),
            (ImageRequest(url: h.url("/status/404")), .httpStatus(404)),
            (ImageRequest(url: h.url("/html200")), .notAnImage),
            (ImageRequest(url: h.url("/img/big.jpg")), .tooLarge),                // body over max_body_size
            (thumb("/img/bomb.png"), .tooLarge),                                 // source over max_source_pixels
            (thumb("/img/pdf"), .notAnImage),
            (thumb("/img/bmp"), .unsupported),                                   // BMP needs allow_magick
            (thumb("/img/cut.jpg"), .decode),
            (ImageRequest(url: h.url("/hold/10000/a.jpg")), .network(.timeout)),
            (ImageRequest(url: h.url("/loop")), .network(.tooManyRedirects)),
            (ImageRequest(url: h.url("/img/c.jpg"), options: .cacheOnly), .notCached),
        ]
        for (request, code) in cases {
            let error = await h.error(request)
            #expect(error?.code == code, "\(request.url) \(request.size.map { "\($0)" } ?? ""): \(String(describing: error))")
            #expect(error?.message.isEmpty == false)
        }
        // Stage errors stay reachable as the underlying error.
        // (Another status than the table's 404: that one is remembered now, negative_ttl.)
        #expect(await h.error(ImageRequest(url: h.url("/status/410")))?.underlying is DownloadError)
        #expect(await h.error(thumb("/img/cut.jpg"))?.underlying is RenderError)
        let cancelled = Task { try await h.pipeline.image(ImageRequest(url: h.url("/gate/a.jpg"))) }
        await h.origin.waitForRequest("/gate/a.jpg")
        cancelled.cancel()
        let failure = await #expect(throws: ArtCacheError.self) { try await cancelled.value }
        #expect(failure?.code == .cancelled)
        h.origin.openGate()
        // A closed pipeline refuses to download: a typed cancellation, not a crash.
        try await h.pipeline.close()
        #expect(await h.error(ImageRequest(url: h.url("/img/b.jpg")))?.code == .cancelled)
        // Storage errors: a cache directory that cannot be created.
        let blocker = h.dir.write("file", "not a directory")
        var configuration = Configuration()
        configuration.cache.directory = blocker + "/cache"
        let storage = await #expect(throws: ArtCacheError.self) { try await ImagePipeline.open(configuration: configuration) }
        #expect(storage?.code == .storage)
    }

    @Test func oneDownloadAndOneRenderForConcurrentRequestsAcrossTiers() async throws {
        let h = try await Self.harness()
        let url = h.url("/gate/a.jpg")
        let tasks = (0..<6).map { _ in h.pipeline.task(ImageRequest(url: url, width: 100, height: 100)) }
        await h.origin.waitForRequest("/gate/a.jpg")
        await h.pipeline.variants.joins.waitInTest { $0 >= 6 }  // all six in the one flight, the download held
        #expect(h.pipeline.variants.inFlight == 1)
        tasks[0].cancel()
        h.origin.openGate()
        #expect(await tasks[0].result.failureCode == .cancelled)
        for task in tasks.dropFirst() {
            let response = try await task.response
            #expect((response.width, response.height) == (100, 75))
            #expect(response.source == .network)
        }
        #expect(h.origin.requestCount("/gate/a.jpg") == 1)
        #expect(h.pipeline.renderer.activity.started == 1)
        // Now from memory, then (a new process's view) from disk.
        #expect(try await h.pipeline.image(ImageRequest(url: url, width: 100, height: 100)).source == .memory)
        h.pipeline.memory.removeAll()
        #expect(try await h.pipeline.image(ImageRequest(url: url, width: 100, height: 100)).source == .disk)
        #expect(h.pipeline.renderer.activity.started == 1)
        #expect(h.origin.requestCount("/gate/a.jpg") == 1)
    }

    @Test func theLastWaiterLeavingDropsTheConnection() async throws {
        let h = try await Self.harness()
        // 200 ms a chunk: a.jpg (~6 KB) takes ~5 s to send, so the client
        // leaves before the body ends even on a loaded machine (under TSan
        // with 20 ms the whole body could go out first, and no abort came).
        let url = h.url("/slow/200/a.jpg")
        let tasks = (0..<3).map { _ in h.pipeline.task(ImageRequest(url: url, width: 64, height: 64)) }
        await h.origin.waitForRequest("/slow/200/a.jpg")
        for task in tasks { task.cancel() }
        await h.origin.waitForAbortedStream("/slow/200/a.jpg")
        for task in tasks { #expect(await task.result.failureCode == .cancelled) }
        #expect(h.pipeline.renderer.activity.started == 0)
        #expect(try await h.pipeline.stats().entries == 0)
    }

    @Test func aHighPriorityRequestOvertakesQueuedPrefetches() async throws {
        let h = try await Self.harness { $0.download.concurrency = 1 }
        let prefetcher = ImagePrefetcher(pipeline: h.pipeline, concurrency: 24, variants: [])
        let gate = prefetcher.start(urls: [h.url("/gate/a.jpg")])
        await h.origin.waitForRequest("/gate/a.jpg")
        let batch = prefetcher.start(urls: (0..<20).map { h.url("/img/p\($0).jpg") })
        await h.pipeline.downloader.waitForActivity { $0.queued >= 20 }
        let visible = h.pipeline.task(ImageRequest(url: h.url("/img/b.jpg"), width: 100, height: 100, priority: .high))
        await h.pipeline.downloader.waitForActivity { $0.queued >= 21 }
        h.origin.openGate()
        _ = try await visible.response
        #expect(await batch.summary.downloaded == 20)
        #expect(await gate.summary.downloaded == 1)
        let log = h.origin.requestLog
        #expect(Array(log.prefix(2)) == ["/gate/a.jpg", "/img/b.jpg"], "\(log)")
    }

    @Test func raisingAQueuedTaskMovesItUp() async throws {
        let h = try await Self.harness { $0.download.concurrency = 1 }
        let blocker = h.pipeline.task(ImageRequest(url: h.url("/gate/a.jpg"), priority: .low))
        await h.origin.waitForRequest("/gate/a.jpg")
        let queued = (0..<5).map { h.pipeline.task(ImageRequest(url: h.url("/img/p\($0).jpg"), priority: .low)) }
        await h.pipeline.downloader.waitForActivity { $0.queued >= 5 }
        queued[4].priority = .veryHigh
        #expect(queued[4].priority == .veryHigh)
        h.origin.openGate()
        _ = try await blocker.response
        for task in queued { _ = try await task.response }
        let log = h.origin.requestLog
        // The raised task goes next; the others follow in whatever order they queued.
        #expect(Array(log.prefix(2)) == ["/gate/a.jpg", "/img/p4.jpg"], "\(log)")
    }

    @Test func rendersStartByPriority() async throws {
        let h = try await Self.harness { $0.thumbnails.concurrency = 1 }
        let data = try Self.jpeg()
        let renderer = h.pipeline.renderer
        let order = Locked<[Int]>([])
        // Hold the only render thread while the others queue.
        let gate = DispatchSemaphore(value: 0)
        let holder = Task { try await renderer.onRenderThread(priority: PriorityHandle(.normal)) { gate.wait() } }
        await renderer.threads.waitForLoad { $0.running >= 1 }
        // What the render thread starts is recorded on it (the tasks'
        // continuations resume on the cooperative pool in no fixed order, so
        // the order in which they return says nothing: under TSan a low one
        // resumed first). Three low jobs note how many jobs had started
        // with them; one real render asks for .veryHigh after them.
        let lows = (0..<3).map { _ in
            Task {
                try await renderer.onRenderThread(priority: PriorityHandle(.low)) {
                    order.withLock { $0.append(renderer.activity.started) }
                }
            }
        }
        await renderer.threads.waitForLoad { $0.waiting >= 3 }
        let high = Task { try await renderer.render(data, spec: VariantSpec(width: 13, height: 10), priority: .veryHigh) }
        await renderer.threads.waitForLoad { $0.waiting >= 4 }
        gate.signal()
        try await holder.value
        _ = try await high.value
        for low in lows { try await low.value }
        // The high one went first (2nd, after the holder), though it asked
        // last: the low ones were the 3rd, 4th and 5th to start.
        #expect(order.withLock { $0 } == [3, 4, 5])
    }

    @Test func memoryTierLimitsHoldAndCachedImageHits() async throws {
        let h = try await Self.harness { $0.memory = MemorySettings(maxBytes: 12_000, maxEntries: 3) }
        h.origin.register("large.png", .init(body: Fixtures.pngLike(size: 20_000), contentType: "image/png"))
        let request = ImageRequest(url: h.url("/img/a.jpg"), width: 60, height: 60)
        #expect(h.pipeline.cachedImage(for: request) == nil)
        let loaded = try await h.pipeline.image(request)
        let hit = try #require(h.pipeline.cachedImage(for: request))
        #expect(hit.source == .memory && hit.data == loaded.data && hit.cacheKey == loaded.cacheKey)
        // Churn: many sizes, the limits hold after every insert.
        for side in 20..<60 {
            _ = try await h.pipeline.image(ImageRequest(url: h.url("/img/p\(side % 24).jpg"), width: side, height: side))
            let stats = h.pipeline.memory.stats
            #expect(stats.entries <= 3 && stats.bytes <= 12_000)
        }
        let stats = try await h.pipeline.stats().memory
        #expect(stats.evictions > 0 && stats.hits >= 1 && stats.misses >= 1)
        #expect(h.pipeline.cachedImage(for: request) == nil)  // long evicted
        // An image larger than the whole tier is never kept.
        let large = ImageRequest(url: h.url("/img/large.png"))
        #expect(try await h.pipeline.image(large).data.count == 20_000)
        #expect(h.pipeline.cachedImage(for: large) == nil)
    }

    @Test func cacheOnlyNeverReachesTheOrigin() async throws {
        let h = try await Self.harness()
        let url = h.url("/img/a.jpg")
        let missing = await h.error(ImageRequest(url: url, width: 50, height: 50, options: .cacheOnly))
        #expect(missing?.code == .notCached)
        #expect(h.origin.totalRequests == 0)
        _ = try await h.pipeline.image(ImageRequest(url: url))
        #expect(h.origin.totalRequests == 1)
        h.pipeline.memory.removeAll()
        // The original is on disk: a new size is rendered from it, offline.
        let thumb = try await h.pipeline.image(ImageRequest(url: url, width: 50, height: 50, options: .cacheOnly))
        #expect(thumb.source == .disk && thumb.rendered && thumb.width == 50)
        #expect(try await h.pipeline.image(ImageRequest(url: url, options: .cacheOnly)).source == .disk)
        #expect(h.origin.totalRequests == 1)
        // reloadIgnoringCache goes to the origin even though the image is fresh.
        #expect(try await h.pipeline.image(ImageRequest(url: url, options: .reloadIgnoringCache)).source == .network)
        #expect(h.origin.totalRequests == 2)
    }

    @Test(arguments: ["/status/404", "/html200", "/hold/10000/a.jpg"])
    func placeholdersOfTheRequestedSizeAreNeverStored(_ path: String) async throws {
        let h = try await Self.harness {
            $0.download.retries = 0
            $0.download.timeout = 3
        }
        let request = ImageRequest(url: h.url(path), width: 120, height: 80, options: .placeholderOnFailure)
        let response = try await h.pipeline.image(request)
        #expect(response.source == .placeholder)
        #expect((response.width, response.height) == (120, 80))
        let header = try #require(Fixtures.header(response.data))
        #expect(header.width == 120 && header.height == 80)
        #expect(response.cacheKey == nil && response.entry == nil)
        let expected: ArtCacheError.Code = switch path {
        case "/status/404": .httpStatus(404)
        case "/html200": .notAnImage
        default: .network(.timeout)
        }
        #expect(response.error?.code == expected)
        #expect(h.pipeline.cachedImage(for: request) == nil)
        #expect(try await h.pipeline.stats().entries == 0)
        // Without the option the same request throws.
        #expect(await h.error(ImageRequest(url: h.url(path), width: 120, height: 80))?.code == expected)
    }

    @Test func aConfiguredPlaceholderFileIsUsed() async throws {
        let dir = TempDir()
        let file = dir.file("placeholder.png")
        try Fixtures.image(width: 300, height: 300, suffix: ".png").write(to: URL(fileURLWithPath: file))
        let h = try await Self.harness { $0.thumbnails.placeholder = file }
        let response = try await h.pipeline.image(ImageRequest(url: h.url("/status/404"), width: 40, height: 40, format: .png,
                                                               options: .placeholderOnFailure))
        #expect(response.source == .placeholder && response.contentType == "image/png")
        #expect((response.width, response.height) == (40, 40))
    }

    @Test func prefetcherReportsEventsAndStops() async throws {
        let h = try await Self.harness()
        let prefetcher = ImagePrefetcher(pipeline: h.pipeline, concurrency: 2, variants: [VariantSpec(width: 50, height: 50)])
        let urls = (0..<6).map { h.url("/img/p\($0).jpg") }
        let batch = prefetcher.start(urls: urls)
        var seen = Set<Int>()
        for await case .item(let index, let item, let progress) in batch.events {
            seen.insert(index)
            #expect(item.url == urls[index])
            #expect(progress.done == seen.count && progress.total == 6)
        }
        #expect(seen == Set(0..<6))
        let summary = await batch.summary
        #expect(summary.downloaded == 6 && summary.variants == 6 && summary.succeeded)
        // Stopping by URL: the held item is cancelled, the others finish.
        let held = prefetcher.start(urls: [h.url("/gate/a.jpg"), h.url("/img/b.jpg")])
        await h.origin.waitForRequest("/gate/a.jpg")
        prefetcher.stop(urls: [h.url("/gate/a.jpg")])
        let result = await held.summary
        #expect(result.failures == ["cancelled": 1] && result.downloaded == 1)
        h.origin.openGate()
    }

    @Test func cancellationBeforeSubmissionIsNotLost() async throws {
        let h = try await Self.harness()
        let transport = h.pipeline.downloader.transport
        let request = TransferRequest(url: h.url("/gate/a.jpg"), host: "127.0.0.1", ifNoneMatch: nil, ifModifiedSince: nil,
                                      settings: h.pipeline.configuration.download)
        for _ in 0..<50 {
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }  // cancelled before the transfer is submitted
                return try await transport.perform(request, priority: PriorityHandle(.normal))
            }
            let error = await #expect(throws: DownloadError.self) { try await task.value }
            #expect(error?.code == .cancelled)
        }
        #expect(h.origin.totalRequests == 0)
        #expect(h.pipeline.downloader.activity.queued == 0)
    }
}

extension LoopbackHarness {
    /// The error `request` ends with, nil when it succeeds.
    func error(_ request: ImageRequest) async -> ArtCacheError? {
        do {
            _ = try await pipeline.image(request)
            return nil
        } catch {
            return error
        }
    }
}

extension Result where Failure == ArtCacheError {
    var failureCode: ArtCacheError.Code? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}
