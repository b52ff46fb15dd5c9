@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheServiceGrammar
@testable import ArtCacheStore
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Store-behind: answers before commits", .timeLimit(.minutes(3)))
struct StoreBehindTests {
    private func openStore(_ dir: TempDir, behindMax: Int) async throws -> CacheStore {
        var settings = Fixtures.settings(dir.file("cache"))
        settings.accessFlushInterval = 0
        settings.writeBehindMax = behindMax
        return try await CacheStore.open(settings: settings)
    }

    @Test("A put behind returns before its commit, is read back meanwhile, and commits once commits run")
    func putsBehindAreReadBeforeTheyCommit() async throws {
        let dir = TempDir()
        let store = try await openStore(dir, behindMax: 2)
        let blocker = try CommitBlocker(cache: dir.file("cache"))
        let original = Fixtures.pngLike(size: 100_000)  // a file blob
        let entry = try await store.putBehind(url: "http://behind.test/a.png", data: original, contentType: "image/png")
        #expect(entry.sha256 == CacheKey.sha256Hex(original))
        #expect(store.writeBehindActivity.pending == 1)
        #expect(try await store.committedEntry(forKey: entry.cacheKey) == nil)  // its commit waits for the lock
        #expect(try await store.lookup(key: entry.cacheKey, counting: false)?.data == original)
        #expect(try await store.entry(forURL: "http://behind.test/a.png")?.sha256 == entry.sha256)

        // A variant behind waits for its original's commit; the queue is then full.
        let thumb = Fixtures.pngLike(size: 500, seed: 7)
        let variant = try await store.putVariantBehind(parent: entry, spec: "32x32", data: thumb, contentType: "image/png",
                                                       width: 32, height: 32)
        #expect(try await store.lookup(key: variant.cacheKey, counting: false)?.data == thumb)
        let dropped = try await store.putBehind(url: "http://behind.test/b.png", data: Fixtures.pngLike(size: 300), contentType: "image/png")
        #expect(store.writeBehindActivity.pending == 2)
        #expect(store.writeBehindActivity.dropped == 1)
        #expect(try await store.lookup(key: dropped.cacheKey, counting: false) == nil)

        blocker.release()
        await store.waitForWritesBehind()
        #expect(store.writeBehindActivity.pending == 0)
        #expect(try await store.committedEntry(forKey: entry.cacheKey)?.sha256 == entry.sha256)
        #expect(try await store.committedEntry(forKey: variant.cacheKey)?.sourceSHA256 == entry.sha256)
        let stats = try await store.stats()
        #expect(stats.originals == 1 && stats.variants == 1)
        #expect(stats.writesDropped == 1)
        try await store.close()

        // Committed for good, and the drop is counted in the index.
        let reopened = try await openStore(dir, behindMax: 2)
        #expect(try await reopened.lookup(key: entry.cacheKey, counting: false)?.data == original)
        #expect(try await reopened.stats().writesDropped == 1)
        try await reopened.close()
    }

    @Test("close() waits for every put behind it accepted")
    func closeWaitsForPutsBehind() async throws {
        let dir = TempDir()
        let store = try await openStore(dir, behindMax: 64)
        let blocker = try CommitBlocker(cache: dir.file("cache"))
        var keys: [CacheKey] = []
        for index in 0..<20 {
            let size = index.isMultiple(of: 2) ? 2_000 : 90_000
            keys.append(try await store.putBehind(url: "http://behind.test/\(index).png", data: Fixtures.pngLike(size: size, seed: UInt8(index)),
                                                  contentType: "image/png").cacheKey)
        }
        #expect(store.writeBehindActivity.pending == 20)
        blocker.release()
        try await store.close()
        let reopened = try await openStore(dir, behindMax: 64)
        for key in keys { #expect(try await reopened.committedEntry(forKey: key) != nil) }
        #expect(try await reopened.stats().writesDropped == 0)
        try await reopened.close()
    }

    @Test("write_behind_max = 0: puts behind are awaited puts")
    func zeroMeansWriteThrough() async throws {
        let dir = TempDir()
        let store = try await openStore(dir, behindMax: 0)
        let entry = try await store.putBehind(url: "http://behind.test/a.png", data: Fixtures.pngLike(size: 1_000), contentType: "image/png")
        #expect(try await store.committedEntry(forKey: entry.cacheKey) != nil)
        #expect(store.writeBehindActivity.accepted == 0)
        try await store.close()
    }

    @Test("A cold thumbnail is answered while its writes wait; the next request is served without a second download")
    func aMissIsAnsweredBeforeItsCommit() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        origin.register("a.jpg", .init(body: try Fixtures.image(width: 400, height: 300, suffix: ".jpg"), contentType: "image/jpeg"))
        origin.register("b.jpg", .init(body: try Fixtures.image(width: 300, height: 200, suffix: ".jpg"), contentType: "image/jpeg"))
        let pipeline = try await Fixtures.pipeline(dir.path) { $0.cache.writeBehindMax = 2 }
        try await pipeline.store.ping()  // the index exists before commits are held
        let blocker = try CommitBlocker(cache: dir.path)

        let request = ImageRequest(url: origin.url("/img/a.jpg"), width: 64, height: 64)
        let first = try await pipeline.image(request)
        #expect(first.source == .network && first.width == 64)
        #expect(pipeline.store.writeBehindActivity.pending == 2)  // the original and its thumbnail
        pipeline.memory.removeAll()
        let second = try await pipeline.image(request)
        #expect(second.source == .disk && second.data == first.data)
        #expect(origin.requestCount("/img/a.jpg") == 1)

        // The queue is full: b is answered all the same, its writes dropped.
        let other = try await pipeline.image(ImageRequest(url: origin.url("/img/b.jpg"), width: 32, height: 32))
        #expect(other.source == .network && other.width == 32)
        #expect(pipeline.store.writeBehindActivity.dropped == 2)

        blocker.release()
        let stats = try await pipeline.store.stats()
        #expect(stats.originals == 1 && stats.variants == 1)
        #expect(stats.writesDropped == 2)
        try await pipeline.close()
    }

    /// `kill -9` of `serve` with answered misses whose writes had not
    /// committed (held by the cleanup lock): those writes are lost, nothing
    /// else; the index has no row without its bytes. A second `serve` on the
    /// cache answers and, on SIGTERM, commits every write before it exits.
    @Test("A killed serve loses only writes it had not committed")
    func aKilledServeLosesOnlyUncommittedWrites() async throws {
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let names = (0..<6).map { "k\($0).jpg" }
        for (index, name) in names.enumerated() {
            origin.register(name, .init(body: try Fixtures.image(width: 300 + index, height: 200, suffix: ".jpg"), contentType: "image/jpeg"))
        }
        let dir = TempDir()
        let cache = dir.file("c")
        let key = String(repeating: "ab", count: 32)
        // Originals as file blobs (temp file, fsync, rename), thumbnails inline.
        let environment = ["ARTCACHE_SERVICE_KEYS": key, "ARTCACHE_CACHE_INLINE_MAX": "2KiB"]
        let signer = ServiceURLSigner(keys: [[UInt8](repeating: 0xAB, count: 32)])
        let paths = names.map { signer.path(for: origin.url("/img/\($0)"), options: ThumbnailOptions(size: .init(48), fit: .cover)) }

        func serve() async throws -> (Child, Pipe, Pipe, Int) {
            let (process, out, err) = try CLI.start(["serve", "--listen", "127.0.0.1:0", "--cache-dir", cache], environment: environment)
            let line = try await CLI.firstLine(out)
            let port = try #require(line.split(separator: ":").last.flatMap { Int($0) }, "\(line)")
            return (process, out, err, port)
        }

        var (process, out, err, port) = try await serve()
        let blocker = try CommitBlocker(cache: cache)
        for path in paths {
            let answer = try await HTTPGet.get("http://127.0.0.1:\(port)\(path)")
            #expect(answer.status == 200 && Fixtures.header(answer.body)?.width == 48)
        }
        kill(process.processIdentifier, SIGKILL)
        _ = await CLI.exit(process, out, err)
        #expect(process.terminationReason == .uncaughtSignal)
        blocker.release()

        let afterKill = try await CLI.run(["verify", "--cache-dir", cache, "--hash", "--json"])
        let report = try JSONDecoder.snake.decode(VerifyReport.self, from: Data(afterKill.stdout.utf8))
        #expect(report.problemCount == 0, "\(afterKill.stdout)")
        #expect(report.rows == 0)  // every write was still pending: lost, and nothing half there

        (process, out, err, port) = try await serve()
        for path in paths {
            #expect(try await HTTPGet.get("http://127.0.0.1:\(port)\(path)").status == 200)
        }
        process.terminate()  // SIGTERM: accepted writes commit before the cache closes
        let log = await CLI.exit(process, out, err).stderr
        #expect(process.terminationStatus == 0, "\(log)")
        let stats = try await CLI.json(["stats", "--cache-dir", cache, "--json"])
        #expect(stats["originals"] as? Int == 6 && stats["variants"] as? Int == 6, "\(stats)")
        #expect(stats["writes_dropped"] as? Int == 0)
        let clean = try await CLI.run(["verify", "--cache-dir", cache, "--hash", "--json"])
        #expect(try JSONDecoder.snake.decode(VerifyReport.self, from: Data(clean.stdout.utf8)).problemCount == 0, "\(clean.stdout)")
    }
}
