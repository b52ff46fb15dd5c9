@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// Real libcurl against a real loopback origin that misbehaves on purpose.
@Suite("Downloader and pipeline", .timeLimit(.minutes(3)))
struct DownloaderTests {
    struct Harness {
        let base: LoopbackHarness
        let jpeg: Data
        let webp: Data
        var origin: OriginServer { base.origin }
        var store: CacheStore { base.store }
        var pipeline: ImagePipeline { base.pipeline }

        init(configure: (inout DownloadSettings) -> Void = { _ in }) async throws {
            base = try await LoopbackHarness { configuration in
                configuration.download.timeout = 30
                // These tests follow revalidation itself: an expired entry
                // waits for the origin (FreshnessTests cover the stale answers).
                configuration.cache.staleWhileRevalidate = 0
                configure(&configuration.download)
            }
            let origin = base.origin
            jpeg = try Fixtures.image(width: 120, height: 90, suffix: ".jpg")
            webp = try Fixtures.image(width: 120, height: 90, suffix: ".webp")
            origin.register("a.jpg", .init(body: jpeg, contentType: "image/jpeg", etag: "\"a1\""))
            origin.register("octet.jpg", .init(body: jpeg, contentType: "application/octet-stream"))
            origin.register("html.jpg", .init(body: jpeg, contentType: "text/html; charset=utf-8"))
            origin.register("png.webp", .init(body: webp, contentType: "image/png"))
            origin.register("big.jpg", .init(body: try Fixtures.image(width: 600, height: 600, suffix: ".jpg[Q=95]"), contentType: "image/jpeg"))
        }

        func failure(_ path: String) async -> DownloadError? {
            do {
                _ = try await pipeline.original(origin.url(path))
                return nil
            } catch {
                return error as? DownloadError
            }
        }
    }

    @Test func wrongContentTypesAreRepaired() async throws {
        let h = try await Harness()
        for (path, declared, sniffed) in [("/img/octet.jpg", "application/octet-stream", "image/jpeg"),
                                          ("/img/html.jpg", "text/html", "image/jpeg"),
                                          ("/img/png.webp", "image/png", "image/webp")] {
            let outcome = try await h.pipeline.original(h.origin.url(path))
            #expect(outcome.source == .downloaded)
            #expect(outcome.repaired)
            #expect(outcome.entry?.contentType == sniffed)
            #expect(outcome.entry?.declaredType == declared)
        }
        let correct = try await h.pipeline.original(h.origin.url("/img/a.jpg"))
        #expect(!correct.repaired)
        let stats = try await h.store.stats()
        #expect(stats.repairs == ["application/octet-stream -> image/jpeg": 1, "text/html -> image/jpeg": 1, "image/png -> image/webp": 1])
    }

    @Test func htmlWithStatus200IsRefusedAndNotCached() async throws {
        let h = try await Harness()
        // Refusing is the pipeline's (it sniffs before it stores), not the downloader's.
        let error = await #expect(throws: ArtCacheError.self) { _ = try await h.pipeline.original(h.origin.url("/html200")) }
        #expect(error?.code == .notAnImage)
        #expect((error?.underlying as? Sniffer.Refusal)?.sniffed == .html)
        #expect(error?.message.hasSuffix("HTML served as image/jpeg") == true)
        #expect(try await h.store.stats().entries == 0)
        #expect(try await h.store.retries.all().isEmpty)
    }

    @Test func notFoundIsFinalAndNotRetried() async throws {
        let h = try await Harness()
        let error = try #require(await h.failure("/status/404"))
        #expect(error.reason == "http_404")
        #expect(h.origin.requestCount("/status/404") == 1)
        #expect(try await h.store.retries.all().isEmpty)
    }

    @Test func serverErrorThenSuccessIsRetried() async throws {
        let h = try await Harness()
        let outcome = try await h.pipeline.original(h.origin.url("/flaky/2/a.jpg"))
        #expect(outcome.source == .downloaded)
        #expect(h.origin.requestCount("/flaky/2/a.jpg") == 3)
        let gaveUp = try #require(await h.failure("/status/503"))
        #expect(gaveUp.reason == "http_503")
        #expect(h.origin.requestCount("/status/503") == 3)  // 1 + 2 retries
    }

    @Test func tooManyRequestsHonoursRetryAfter() async throws {
        let h = try await Harness()
        let started = Date()
        let outcome = try await h.pipeline.original(h.origin.url("/ratelimit/1/1/a.jpg"))
        #expect(outcome.source == .downloaded)
        #expect(Date().timeIntervalSince(started) >= 0.95)  // waited the Retry-After second
        #expect(h.origin.requestCount("/ratelimit/1/1/a.jpg") == 2)
        // A Retry-After beyond retry_max_delay is capped.
        let capped = Date()
        _ = try await h.pipeline.original(h.origin.url("/ratelimit/1/3600/a.jpg"))
        #expect(Date().timeIntervalSince(capped) < 60)
    }

    @Test func slowBodyIsAbortedByTheLowSpeedLimit() async throws {
        let h = try await Harness {
            $0.retries = 0
            $0.lowSpeedLimit = 100_000
            $0.lowSpeedTime = 1
        }
        let started = Date()
        let error = try #require(await h.failure("/slow/100/big.jpg"))
        #expect(error.code == .timeout)
        #expect(Date().timeIntervalSince(started) < 30)
        #expect(try await h.store.retries.all().map(\.reason) == ["timeout"])  // a network failure: queued
    }

    @Test func truncatedBodyIsANetworkFailure() async throws {
        let h = try await Harness { $0.retries = 1 }
        let error = try #require(await h.failure("/truncated/big.jpg"))
        #expect(error.code == .truncated, "\(error)")
        #expect(h.origin.requestCount("/truncated/big.jpg") == 2)
        #expect(try await h.store.stats().entries == 0)
        #expect(try await h.store.retries.all().count == 1)
    }

    @Test func redirects() async throws {
        let h = try await Harness { $0.maxRedirects = 3 }
        let ok = try await h.pipeline.original(h.origin.url("/redirect/3/a.jpg"))
        #expect(ok.source == .downloaded)
        #expect(ok.entry?.url == h.origin.url("/redirect/3/a.jpg"))  // keyed by the URL asked for
        #expect(try #require(await h.failure("/redirect/4/a.jpg")).code == .tooManyRedirects)
        #expect(try #require(await h.failure("/loop")).code == .tooManyRedirects)
    }

    @Test func endlessBodyStopsAtTheByteCap() async throws {
        let h = try await Harness {
            $0.maxBodyBytes = 1_000_000
            $0.retries = 0
        }
        let error = try #require(await h.failure("/endless"))
        #expect(error.code == .tooLarge)
        #expect(try await h.store.retries.all().isEmpty)  // the origin's answer, not the network
    }

    @Test func plainHTTPCanBeRefused() async throws {
        let h = try await Harness { $0.allowHTTP = false }
        #expect(try #require(await h.failure("/img/a.jpg")).code == .refusedScheme)
    }

    @Test func freshEntriesSkipTheNetworkAndExpiredOnesRevalidate() async throws {
        let h = try await Harness()
        let fresh = h.origin.url("/img/fresh.jpg")
        h.origin.register("fresh.jpg", .init(body: h.jpeg, contentType: "image/jpeg", cacheControl: "max-age=3600", etag: "\"f\""))
        h.origin.register("stale.jpg", .init(body: h.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"s\""))
        h.origin.register("private.jpg", .init(body: h.jpeg, contentType: "image/jpeg", cacheControl: "no-store"))
        #expect(try await h.pipeline.original(fresh).source == .downloaded)
        #expect(try await h.pipeline.original(fresh).source == .cached)
        #expect(h.origin.requestCount("/img/fresh.jpg") == 1)
        let entry = try #require(try await h.store.entry(forURL: fresh))
        #expect(entry.etag == "\"f\"")
        #expect(entry.expiresAt.map { $0.timeIntervalSinceNow > 3000 } == true)

        let stale = h.origin.url("/img/stale.jpg")
        #expect(try await h.pipeline.original(stale).source == .downloaded)
        let revalidated = try await h.pipeline.original(stale)
        #expect(revalidated.source == .revalidated)
        #expect(revalidated.data == h.jpeg)
        #expect(h.origin.notModifiedCount == 1)

        let noStore = try await h.pipeline.original(h.origin.url("/img/private.jpg"))
        #expect(noStore.source == .uncacheable)
        #expect(try await h.store.entry(forURL: h.origin.url("/img/private.jpg")) == nil)
    }

    /// A 304 that says nothing about freshness keeps the stored policy: a
    /// `no-cache` entry is revalidated every time, never fresh forever.
    @Test func notModifiedWithoutCachingHeadersKeepsTheStoredPolicy() async throws {
        let h = try await Harness()
        h.origin.register("nc.jpg", .init(body: h.jpeg, contentType: "image/jpeg", cacheControl: "no-cache", etag: "\"n\"",
                                          bare304: true))
        let url = h.origin.url("/img/nc.jpg")
        #expect(try await h.pipeline.original(url).source == .downloaded)
        for round in 1...3 {
            #expect(try await h.pipeline.original(url).source == .revalidated)
            #expect(h.origin.notModifiedCount == round)
        }
        let entry = try #require(try await h.store.entry(forURL: url))
        #expect(entry.freshFor == 0)
        #expect(entry.expiresAt.map { $0.timeIntervalSinceNow <= 0 } == true)
        // A 304 that does carry caching headers replaces the policy.
        let stale = h.origin.url("/img/stale.jpg")
        h.origin.register("stale.jpg", .init(body: h.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"s\""))
        _ = try await h.pipeline.original(stale)
        h.origin.register("stale.jpg", .init(body: h.jpeg, contentType: "image/jpeg", cacheControl: "max-age=600", etag: "\"s\""))
        #expect(try await h.pipeline.original(stale).source == .revalidated)
        #expect(try await h.pipeline.original(stale).source == .cached)
        #expect(try await h.store.entry(forURL: stale)?.freshFor == 600)
    }

    /// Ten callers in one flight: the origin holds the one request until
    /// all ten have joined it, so they overlap however the machine runs.
    @Test func concurrentCallersShareOneDownload() async throws {
        let h = try await Harness()
        let url = h.origin.url("/gate/a.jpg")
        let results = try await withThrowingTaskGroup(of: FetchOutcome.self) { group in
            for _ in 0..<10 { group.addTask { try await h.pipeline.original(url) } }
            await h.origin.waitForRequest("/gate/a.jpg")
            await h.pipeline.originals.joins.waitInTest { $0 >= 10 }
            #expect(h.pipeline.originals.inFlight == 1, "ten callers, one flight")
            h.origin.openGate()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 10)
        #expect(results.allSatisfy { $0.data == h.jpeg })
        // Every caller has the download's own outcome, none a later read of the store.
        #expect(results.map(\.source) == Array(repeating: .downloaded, count: 10))
        #expect(h.origin.requestCount("/gate/a.jpg") == 1)
    }

    @Test func cancellingOneCallerLeavesTheOthers() async throws {
        let h = try await Harness()
        let url = h.origin.url("/slow/20/big.jpg")
        let survivor = Task { try await h.pipeline.original(url) }
        let quitter = Task { try await h.pipeline.original(url) }
        await h.origin.waitForRequest("/slow/20/big.jpg")
        quitter.cancel()
        await #expect(throws: CancellationError.self) { try await quitter.value }
        let outcome = try await survivor.value
        #expect(outcome.source == .downloaded)
        #expect(h.origin.requestCount("/slow/20/big.jpg") == 1)
    }

    @Test func cancellingEveryCallerAbortsTheTransfer() async throws {
        let h = try await Harness()
        let url = h.origin.url("/slow/50/big.jpg")
        let a = Task { try await h.pipeline.original(url) }
        let b = Task { try await h.pipeline.original(url) }
        await h.origin.waitForRequest("/slow/50/big.jpg")
        a.cancel()
        b.cancel()
        await #expect(throws: CancellationError.self) { try await a.value }
        await #expect(throws: CancellationError.self) { try await b.value }
        #expect(h.pipeline.originals.inFlight == 0)
        await h.origin.waitForAbortedStream("/slow/50/big.jpg")  // the origin saw the connection go
        #expect(try await h.store.entry(forURL: url) == nil)
    }

    @Test func totalAndPerHostLimitsHold() async throws {
        let h = try await Harness {
            $0.concurrency = 4
            $0.perHost = 3
        }
        // Two host names for the one loopback origin. The origin holds the
        // first four requests until all four have arrived: the limit is
        // reached for certain, and a fifth at once would be seen.
        let urls = (0..<12).flatMap { i in
            [h.origin.url("/gate/4/a.jpg?i=\(i)"),
             h.origin.url("/gate/4/a.jpg?i=\(i)").replacingOccurrences(of: "127.0.0.1", with: "localhost")]
        }
        let (summary, _) = await h.pipeline.prefetch(urls, concurrency: 50)
        #expect(summary.downloaded == 24, "\(summary.failures)")
        #expect(h.origin.maxConcurrent == 4)
        #expect(h.origin.maxConcurrent(host: "127.0.0.1:\(h.origin.port)") <= 3)
        #expect(h.origin.maxConcurrent(host: "localhost:\(h.origin.port)") <= 3)
    }

    @Test func retryQueueSurvivesARestartAndDrains() async throws {
        let dir = TempDir()
        // The origin is down (its port held, refusing), then comes back on the same socket.
        let held = try HeldPort()
        let url = held.baseURL + "/img/a.jpg"
        do {
            let pipeline = try await Fixtures.pipeline(dir.path) { $0.download.retries = 0 }
            let (summary, _) = await pipeline.prefetch([url], concurrency: 1)
            #expect(summary.failures == ["connect": 1])
            try await pipeline.close()
        }
        let reopened = try await Fixtures.pipeline(dir.path) { $0.download.retries = 0 }
        #expect(try await reopened.retryQueue().map(\.url) == [url])
        #expect(try await reopened.stats().retryQueue == 1)
        let again = try held.listen()
        again.register("a.jpg", .init(body: try Fixtures.image(suffix: ".jpg"), contentType: "image/jpeg"))
        let (summary, _) = await reopened.prefetch(try await reopened.retryQueue().map(\.url), concurrency: 1)
        #expect(summary.downloaded == 1)
        #expect(try await reopened.retryQueue().isEmpty)
        try await reopened.close()
        again.stop()
    }

    /// A manifest reads the queue's rows for its result set's URLs only
    /// (one lookup each through the primary key), more than the statement's
    /// chunk of them included.
    @Test func retryItemsAreLookedUpByURL() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        for i in 0..<20 {
            try await store.retries.add(url: "http://x.test/\(i).jpg", reason: "connect", message: "refused")
        }
        let asked = ["http://x.test/3.jpg", "http://x.test/17.jpg", "http://x.test/3.jpg"]
            + (0..<RetryQueue.lookupChunk).map { "http://y.test/\($0).jpg" }
        let found = try await store.retries.items(urls: asked)
        #expect(Set(found.keys) == ["http://x.test/3.jpg", "http://x.test/17.jpg"])
        #expect(found["http://x.test/17.jpg"]?.reason == "connect")
        #expect(try await store.retries.items(urls: []).isEmpty)
        try await store.close()
    }

    @Test func retryQueueIsBoundedOldestFirst() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let start = Date()
        for i in 0..<10 {
            try await store.retries.add(url: "http://x.test/\(i).jpg", reason: "connect", message: "refused", limit: 4,
                                         now: start.addingTimeInterval(Double(i)))
        }
        #expect(try await store.retries.all().map(\.url) == (6..<10).map { "http://x.test/\($0).jpg" })
        let stats = try await store.stats()
        #expect(stats.retryQueue == 4 && stats.retryDropped == 6)
        try await store.close()

        // Through the pipeline, with the configured bound.
        // A port bound but not listening: refused at once, and no other test's server can take it.
        let refusing = try OfflineTests.RefusingPort()
        let port = refusing.port
        let other = TempDir()
        let pipeline = try await Fixtures.pipeline(other.path) {
            $0.download.retries = 0
            $0.download.retryQueueMax = 3
            $0.download.offlineAfter = 1000  // every URL tried: this test is about the queue's bound
        }
        let (summary, _) = await pipeline.prefetch((0..<6).map { "http://127.0.0.1:\(port)/img/\($0).jpg" }, concurrency: 1)
        #expect(summary.failures == ["connect": 6])
        #expect(try await pipeline.retryQueue().count == 3)
        #expect(try await pipeline.stats().retryDropped == 3)
        try await pipeline.close()
        withExtendedLifetime(refusing) {}
    }

    /// Regression: every transfer used CURLOPT_PIPEWAIT, so on plain http
    /// (no HTTP/2) the transfers to a host queued behind the first one's
    /// response: one slow image held every other image of that host.
    @Test func aSlowResponseDoesNotHoldOtherTransfersToItsHost() async throws {
        // The gate stays closed until the fast transfer is done, so the slow
        // one cannot have finished unless something timed out: the timeout
        // is far beyond any machine's time for one small image (also under
        // TSan), and a transfer queued behind the gated one would wait for
        // it, then find the slow one done.
        let h = try await Harness { $0.timeout = 60; $0.retries = 0 }
        let slowDone = Locked(false)
        let slow = Task {
            defer { slowDone.withLock { $0 = true } }
            return try await h.pipeline.original(h.origin.url("/gate/a.jpg"))
        }
        await h.origin.waitForRequest("/gate/a.jpg")
        let fast = try await h.pipeline.original(h.origin.url("/img/octet.jpg"))
        #expect(fast.source == .downloaded)
        #expect(!slowDone.withLock { $0 }, "the second transfer waited for the gated one")
        h.origin.openGate()
        #expect(try await slow.value.source == .downloaded)
    }
}
