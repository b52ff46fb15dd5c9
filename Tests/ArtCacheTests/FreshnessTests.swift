@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheStore
import Foundation
import Testing

/// Freshness apart from eviction (issue 22), against the loopback origin:
/// stale-while-revalidate, stale on errors, the origin's directives and
/// negative caching.
@Suite("Freshness", .timeLimit(.minutes(3)))
struct FreshnessTests {
    static func harness(_ configure: @escaping (inout Configuration) -> Void = { _ in }) async throws -> LoopbackHarness {
        try await LoopbackHarness { configuration in
            configuration.download.retries = 0
            configuration.download.timeout = 30
            configure(&configuration)
        }
    }

    static let jpeg = try! Fixtures.image(width: 200, height: 150, suffix: ".jpg")
    static let otherJPEG = try! Fixtures.image(width: 160, height: 160, suffix: ".jpg[Q=70]")

    /// 100 concurrent requests for one expired original and 100 for one
    /// expired thumbnail: one origin request each (a 304), which the origin
    /// holds until the 100 are in. With stale-while-revalidate they are all
    /// answered stale meanwhile and the one revalidation runs behind;
    /// without it all 100 wait in the one revalidation.
    @Test(arguments: [true, false])
    func aStormOnStaleEntriesAsksTheOriginOnceEach(whileRevalidate: Bool) async throws {
        let h = try await Self.harness { $0.cache.staleWhileRevalidate = whileRevalidate ? 86400 : 0 }
        for name in ["a.jpg", "b.jpg"] {
            h.origin.register(name, .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"v1\""))
        }
        let original = ImageRequest(url: h.url("/gate/a.jpg"))
        let thumbnail = ImageRequest(url: h.url("/gate/b.jpg"), width: 50, height: 50)
        h.origin.openGate()
        #expect(try await h.pipeline.image(original).source == .network)
        #expect(try await h.pipeline.image(thumbnail).source == .network)
        await h.store.waitForWritesBehind()
        // The origin's 304 makes them fresh for an hour: requests after the
        // revalidation are answered from the cache, whenever they come.
        for name in ["a.jpg", "b.jpg"] {
            h.origin.register(name, .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=3600", etag: "\"v1\""))
        }
        // The flights each storm waits in: loads of originals, renders of thumbnails.
        let storms: [(ImageRequest, String, Watched<Int>, () -> Int)] = [
            (original, "/gate/a.jpg", h.pipeline.originals.joins, { h.pipeline.originals.inFlight }),
            (thumbnail, "/gate/b.jpg", h.pipeline.variants.joins, { h.pipeline.variants.inFlight }),
        ]
        for (request, path, joins, inFlight) in storms {
            h.origin.closeGate()
            let joined = joins.withLock { $0 }
            let answers = try await withThrowingTaskGroup(of: ImageResponse.self) { group in
                for _ in 0..<100 { group.addTask { try await h.pipeline.image(request) } }
                var answers: [ImageResponse] = []
                if whileRevalidate {
                    // Every answer comes while the revalidation is held.
                    for _ in 0..<100 { answers.append(try await group.next()!) }
                    await h.origin.waitForRequests(path, 2)
                } else {
                    await h.origin.waitForRequests(path, 2)  // the revalidation, held
                    await joins.waitInTest { $0 >= joined + 100 }  // and all 100 wait in it
                    #expect(inFlight() == 1)
                }
                h.origin.openGate()
                for try await answer in group { answers.append(answer) }
                return answers
            }
            await h.pipeline.waitForRevalidations()
            #expect(answers.count == 100)
            #expect(answers.allSatisfy { !$0.rendered }, "a 304 keeps the stored thumbnail")
            #expect(answers.allSatisfy { $0.data == answers[0].data })
            #expect(Set(answers.map(\.source)) == [whileRevalidate ? .stale : .revalidated], "\(Set(answers.map(\.source)))")
        }
        #expect(h.origin.requestCount("/gate/a.jpg") == 2, "one download, one revalidation")
        #expect(h.origin.requestCount("/gate/b.jpg") == 2, "one download, one revalidation")
        #expect(h.origin.notModifiedCount == 2)
        let counters = h.pipeline.freshnessCounters
        #expect(counters.revalidated304 == 2)
        #expect((counters.stale[.whileRevalidate] ?? 0 > 0) == whileRevalidate)
        // Fresh again: from the cache, the origin not asked.
        #expect(try await h.pipeline.image(thumbnail).source != .stale)
        #expect(h.origin.requestCount("/gate/b.jpg") == 2)
        try await h.pipeline.close()
    }

    /// An origin answering 5xx after its image was cached: the stored image
    /// is served within stale_if_error (and the origin's `stale-if-error=`
    /// wins); past it, and for `must-revalidate`, the typed error.
    @Test func originErrorsServeStaleWithinStaleIfErrorThenTypedErrors() async throws {
        let h = try await Self.harness { $0.cache.staleWhileRevalidate = 0 }
        let rules = ["a.jpg": "max-age=0", "zero.jpg": "max-age=0, stale-if-error=0", "must.jpg": "max-age=0, must-revalidate"]
        for (name, cacheControl) in rules {
            h.origin.register(name, .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: cacheControl, etag: "\"v1\""))
            #expect(try await h.pipeline.image(ImageRequest(url: h.url("/img/" + name))).source == .network)
            h.origin.register(name, .init(body: Data(), contentType: nil, status: 503))
        }
        let stale = try await h.pipeline.image(ImageRequest(url: h.url("/img/a.jpg")))
        #expect(stale.source == .stale)
        #expect(stale.data == Self.jpeg)
        let thumbnail = try await h.pipeline.image(ImageRequest(url: h.url("/img/a.jpg"), width: 40, height: 40))
        #expect(thumbnail.source == .stale && thumbnail.width == 40)
        for name in ["zero.jpg", "must.jpg"] {
            let error = await #expect(throws: ArtCacheError.self) {
                try await h.pipeline.image(ImageRequest(url: h.url("/img/" + name)))
            }
            #expect(error?.code == .httpStatus(503), "\(name): \(String(describing: error))")
        }
        #expect(h.pipeline.freshnessCounters.stale[.originError] == 2)
        #expect(h.pipeline.freshnessCounters.revalidationErrors == 4)
        // The stored bytes were kept all along.
        #expect(try await h.store.entry(forURL: h.url("/img/zero.jpg")) != nil)
        try await h.pipeline.close()

        // Past stale_if_error (0 here): the typed error, the entry kept.
        let strict = try await Self.harness { $0.cache.staleWhileRevalidate = 0; $0.cache.staleIfError = 0 }
        strict.origin.register("a.jpg", .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"v1\""))
        _ = try await strict.pipeline.image(ImageRequest(url: strict.url("/img/a.jpg")))
        strict.origin.register("a.jpg", .init(body: Data(), contentType: nil, status: 500))
        let error = await #expect(throws: ArtCacheError.self) {
            try await strict.pipeline.image(ImageRequest(url: strict.url("/img/a.jpg")))
        }
        #expect(error?.code == .httpStatus(500))
        #expect(try await strict.store.entry(forURL: strict.url("/img/a.jpg")) != nil)
        try await strict.pipeline.close()
    }

    /// An unreachable origin (its host offline) keeps stale entries served
    /// without limit, except those the origin marked `must-revalidate`.
    @Test func anOfflineOriginServesStaleUnlessTheOriginForbadeIt() async throws {
        let h = try await Self.harness { $0.cache.staleWhileRevalidate = 0; $0.cache.staleIfError = 0; $0.download.offlineAfter = 1 }
        h.origin.register("a.jpg", .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"v1\""))
        h.origin.register("m.jpg", .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "no-cache", etag: "\"v1\""))
        for name in ["a.jpg", "m.jpg"] { _ = try await h.pipeline.image(ImageRequest(url: h.url("/img/" + name))) }
        let authority = try NormalizedURL(h.url("/img/a.jpg")).authority
        h.pipeline.downloader.breaker.record(DownloadError(.connect, "refused"), host: authority)
        #expect(try await h.pipeline.image(ImageRequest(url: h.url("/img/a.jpg"))).source == .stale)
        let error = await #expect(throws: ArtCacheError.self) {
            try await h.pipeline.image(ImageRequest(url: h.url("/img/m.jpg")))
        }
        #expect(error?.code == .network(.hostOffline))
        #expect(h.pipeline.freshnessCounters.stale[.offline] == 1)
        try await h.pipeline.close()
    }

    /// A 404 (and a body that is not an image) is remembered for
    /// negative_ttl, in the index: a second request, from this process or
    /// another, fails at once without an origin request; `purge --failures`
    /// forgets it; negative_ttl = 0 turns it off.
    @Test func aRememberedFailureAsksTheOriginOnce() async throws {
        let h = try await Self.harness()
        for (path, code) in [("/status/404", ArtCacheError.Code.httpStatus(404)), ("/html200", .notAnImage)] {
            for attempt in 1...3 {
                let error = await #expect(throws: ArtCacheError.self) {
                    try await h.pipeline.image(ImageRequest(url: h.url(path)))
                }
                #expect(error?.code == code)
                #expect(error?.message.contains("remembered") == (attempt > 1), "\(String(describing: error))")
            }
            #expect(h.origin.requestCount(path) == 1, "\(path)")
        }
        #expect(try await h.store.stats().freshness.negative == 2)
        // Another pipeline on the same cache (another process) sees them.
        let other = try await Fixtures.pipeline(h.dir.path) { $0.download.retries = 0 }
        let seen = await #expect(throws: ArtCacheError.self) { try await other.image(ImageRequest(url: h.url("/status/404"))) }
        #expect(seen?.code == .httpStatus(404))
        #expect(h.origin.requestCount("/status/404") == 1)
        try await other.close()

        let report = try await h.pipeline.purge(PurgeRequest(failures: true))
        #expect(report.failures == 2 && report.removed == 0)
        #expect(await h.error(ImageRequest(url: h.url("/status/404")))?.code == .httpStatus(404))
        #expect(h.origin.requestCount("/status/404") == 2, "asked again once forgotten")
        try await h.pipeline.close()

        let off = try await Self.harness { $0.download.negativeTTL = 0 }
        for _ in 0..<2 { #expect(await off.error(ImageRequest(url: off.url("/status/404")))?.code == .httpStatus(404)) }
        #expect(off.origin.requestCount("/status/404") == 2)
        try await off.pipeline.close()
    }

    /// stats --json `freshness`: fresh, stale (within its window), expired
    /// (past it, or must-revalidate), negative.
    @Test func statsCountOriginalsByFreshness() async throws {
        let h = try await Self.harness()
        let rules = ["fresh.jpg": "max-age=3600", "none.jpg": nil, "stale.jpg": "max-age=0",
                     "expired.jpg": "max-age=0, stale-while-revalidate=0", "must.jpg": "max-age=0, must-revalidate"]
        for (name, cacheControl) in rules {
            h.origin.register(name, .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: cacheControl))
            _ = try await h.pipeline.image(ImageRequest(url: h.url("/img/" + name)))
        }
        #expect(await h.error(ImageRequest(url: h.url("/status/410")))?.code == .httpStatus(410))
        let freshness = try await h.store.stats().freshness
        #expect(freshness.fresh == 2)
        #expect(freshness.stale == 1)
        #expect(freshness.expired == 2)
        #expect(freshness.negative == 1)
        try await h.pipeline.close()
    }

    /// New bytes behind an expired URL replace the original; its thumbnails
    /// in this process's memory tier go with the old bytes.
    @Test func newBytesDropTheOldThumbnailsFromMemory() async throws {
        let h = try await Self.harness { $0.cache.staleWhileRevalidate = 0 }
        h.origin.register("a.jpg", .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"v1\""))
        let thumbnail = ImageRequest(url: h.url("/img/a.jpg"), width: 30, height: 30)
        let first = try await h.pipeline.image(thumbnail)
        h.origin.register("a.jpg", .init(body: Self.otherJPEG, contentType: "image/jpeg", cacheControl: "max-age=3600", etag: "\"v2\""))
        #expect(try await h.pipeline.image(ImageRequest(url: h.url("/img/a.jpg"))).data == Self.otherJPEG)
        #expect(h.pipeline.memory.image(forKey: try h.pipeline.resolve(thumbnail).memoryKey, freshAt: .distantPast) == nil,
                "the old thumbnail left the memory tier")
        let second = try await h.pipeline.image(thumbnail)
        #expect(second.rendered && second.data != first.data)
        try await h.pipeline.close()
    }

    /// `artcache get`: an expired original is printed at once (`stale`) and
    /// its revalidation ends before the process does, so the next run finds
    /// it fresh.
    @Test func theCLIAnswersStaleAndRevalidatesBeforeItExits() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        origin.register("a.jpg", .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"v1\""))
        let cache = dir.file("cache")
        func source() async throws -> String? {
            let run = try await CLI.run(["get", origin.url("/img/a.jpg"), "--cache-dir", cache, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let json = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
            return json?["source"] as? String
        }
        #expect(try await source() == "downloaded")
        origin.register("a.jpg", .init(body: Self.jpeg, contentType: "image/jpeg", cacheControl: "max-age=3600", etag: "\"v1\""))
        #expect(try await source() == "stale")
        #expect(origin.notModifiedCount == 1, "revalidated before the process exited")
        #expect(try await source() == "cached")
        #expect(origin.requestCount("/img/a.jpg") == 2)
    }

    @Test func cacheControlDirectivesAreKept() {
        let now = Date()
        let policy = HTTPCachePolicy(headers: ["cache-control": "public, max-age=60, stale-while-revalidate=30, stale-if-error=\"600\", immutable"],
                                     now: now)
        #expect(policy.staleWhileRevalidate == 30 && policy.staleIfError == 600 && policy.immutable && !policy.mustRevalidate)
        #expect(HTTPCachePolicy(headers: ["cache-control": "max-age=60, must-revalidate"]).mustRevalidate)
        #expect(HTTPCachePolicy(headers: ["cache-control": "no-cache"]).mustRevalidate)
        #expect(HTTPCachePolicy(headers: ["cache-control": "stale-while-revalidate=-1"]).staleWhileRevalidate == nil)
        // A 304 that restates Cache-Control replaces the rules; one without keeps them.
        let stored = policy.validators(["etag": "\"a\""])
        #expect(HTTPCachePolicy.afterNotModified([:], stored: stored, now: now).staleWhileRevalidate == 30)
        let restated = HTTPCachePolicy.afterNotModified(["cache-control": "max-age=5, must-revalidate"], stored: stored, now: now)
        #expect(restated.mustRevalidate && restated.staleWhileRevalidate == nil && !restated.immutable)
    }
}
