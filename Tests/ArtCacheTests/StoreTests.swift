@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import GRDB
import Testing

@Suite("Store and index")
struct StoreTests {
    @Test func roundTripAndMetadata() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let jpeg = try Fixtures.image(suffix: ".jpg")
        let expiry = Date(timeIntervalSince1970: 2_000_000_000)
        let stored = try await store.put(url: "HTTPS://Art.Example.com:443/a.jpg#x", data: jpeg, declaredType: "image/jpeg; charset=binary",
                                         validators: HTTPValidators(etag: "\"v1\"", lastModified: "Tue, 01 Jan 2030 00:00:00 GMT", expiresAt: expiry))
        #expect(stored.repaired == false)
        #expect(stored.entry.url == "https://art.example.com/a.jpg")
        #expect(stored.entry.host == "art.example.com")
        #expect(stored.entry.contentType == "image/jpeg")
        #expect(stored.entry.declaredType == "image/jpeg")
        #expect(stored.entry.size == Int64(jpeg.count))
        #expect(stored.entry.etag == "\"v1\"")
        #expect(stored.entry.expiresAt == expiry)
        let hit = try #require(try await store.lookup(url: "https://art.example.com/a.jpg"))
        #expect(hit.data == jpeg)
        #expect(hit.entry.isInline)  // small: inside the database
        #expect(try await store.lookup(url: "https://art.example.com/missing.jpg") == nil)
        let stats = try await store.stats()
        #expect(stats.hits == 1)
        #expect(stats.misses == 1)
        #expect(stats.entries == 1)
        #expect(stats.bytes == Int64(jpeg.count))
        #expect(stats.hosts["art.example.com"] == CacheStats.Host(entries: 1, bytes: Int64(jpeg.count)))
        try await store.close()
        // Reopen: everything is still there, hit counts included.
        let reopened = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let entry = try #require(try await reopened.entry(forURL: "https://art.example.com/a.jpg"))
        #expect(entry.hitCount == 1)
        #expect(try await reopened.stats().hits == 1)
    }

    @Test func repairsAreCountedAndNonImagesRefused() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let webp = try Fixtures.image(suffix: ".webp")
        let stored = try await store.put(url: "https://h/a", data: webp, declaredType: "image/png")
        #expect(stored.repaired)
        #expect(stored.entry.contentType == "image/webp")
        try await store.put(url: "https://h/b", data: webp, declaredType: "image/png")
        try await store.put(url: "https://h/c", data: try Fixtures.image(suffix: ".jpg"), declaredType: "application/octet-stream")
        let html = Data("<!DOCTYPE html><html><body>502 Bad Gateway</body></html>".utf8)
        // The check every stored body goes through (the pipeline's, before the store).
        let error = await #expect(throws: Sniffer.Refusal.self) {
            try await store.put(url: "https://h/d", data: html, declaredType: "image/jpeg")
        }
        #expect(error?.sniffed == .html)
        #expect(error?.message == "HTML served as image/jpeg")
        let empty = await #expect(throws: Sniffer.Refusal.self) { try await store.put(url: "https://h/e", data: Data(), declaredType: "image/png") }
        #expect(empty?.sniffed == .empty)
        let stats = try await store.stats()
        #expect(stats.repairs == ["image/png -> image/webp": 2, "application/octet-stream -> image/jpeg": 1])
        #expect(stats.entries == 3)
        #expect(try await store.entry(forURL: "https://h/d") == nil)
    }

    @Test func replacingAnOriginalDropsStaleVariantsAndOldBlob() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, inlineMax: 0))
        let first = try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 100, seed: 1))
        try await store.putVariant(parent: first.entry.cacheKey, spec: "10x10", data: Fixtures.pngLike(size: 20), width: 10, height: 10)
        let second = try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 200, seed: 2))
        #expect(second.entry.blob != first.entry.blob)
        #expect(!FileManager.default.fileExists(atPath: store.filePath(of: first.entry)))
        #expect(try await store.variants(of: first.entry.cacheKey).isEmpty)
        let stats = try await store.stats()
        #expect(stats.entries == 1)
        #expect(stats.bytes == 200)
        #expect(try await store.verify().remaining == 0)
    }

    @Test func variantNeedsItsOriginal() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let error = await #expect(throws: StoreError.self) {
            try await store.putVariant(parent: CacheKey(hex: String(repeating: "a", count: 64)), spec: "1x1",
                                       data: Fixtures.pngLike(size: 10), width: 1, height: 1)
        }
        #expect(error?.code == .missingParent)
    }

    /// Items accessed recently survive; the least recently accessed go first.
    @Test func lruOrderDecidesEviction() async throws {
        let dir = TempDir()
        // 10 items of 1000 bytes fit; the 11th evicts down to 90% of 10000.
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, maxBytes: 10_000))
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        for i in 0..<10 {
            try await store.put(url: "https://h/\(i).png", data: Fixtures.pngLike(size: 1000, seed: UInt8(i)), now: base + Double(i))
        }
        // Read item 0 and 1: they become the most recently used.
        _ = try await store.lookup(url: "https://h/0.png")
        _ = try await store.lookup(url: "https://h/1.png")
        try await store.put(url: "https://h/10.png", data: Fixtures.pngLike(size: 1000), now: Date())
        let stats = try await store.stats()
        #expect(stats.bytes <= 9000)
        #expect(stats.evictions == 2)
        for gone in [2, 3] { #expect(try await store.entry(forURL: "https://h/\(gone).png") == nil, "item \(gone)") }
        for kept in [0, 1, 4, 9, 10] { #expect(try await store.entry(forURL: "https://h/\(kept).png") != nil, "item \(kept)") }
        #expect(try await store.verify().remaining == 0)  // blobs went with their rows
    }

    @Test func countLimitEvicts() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, maxEntries: 20, lowWater: 0.5))
        for i in 0..<21 {
            try await store.put(url: "https://h/\(i).png", data: Fixtures.pngLike(size: 50), now: Date(timeIntervalSince1970: 1_700_000_000 + Double(i)))
        }
        let stats = try await store.stats()
        #expect(stats.entries == 10)
        #expect(try await store.entry(forURL: "https://h/20.png") != nil)
        #expect(try await store.entry(forURL: "https://h/10.png") == nil)
    }

    @Test func ageEvictsItemsNotAccessedRecently() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, maxAge: 3600))
        let now = Date()
        try await store.put(url: "https://h/old.png", data: Fixtures.pngLike(size: 50), now: now - 7200)
        try await store.put(url: "https://h/new.png", data: Fixtures.pngLike(size: 50), now: now)
        // The first write's sweep ran before the old item existed; force the next one.
        try await store.enforceLimits(now: now + 61)
        #expect(try await store.entry(forURL: "https://h/old.png") == nil)
        #expect(try await store.entry(forURL: "https://h/new.png") != nil)
        #expect(try await store.stats().evictions == 1)
    }

    @Test func evictingAnOriginalTakesItsVariants() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, maxBytes: 3000, lowWater: 0.5))
        let t0 = Date(timeIntervalSince1970: 1_700_000_000)
        let a = try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 1000), now: t0)
        try await store.putVariant(parent: a.entry.cacheKey, spec: "s", data: Fixtures.pngLike(size: 100), width: 1, height: 1, now: t0)
        try await store.putVariant(parent: a.entry.cacheKey, spec: "m", data: Fixtures.pngLike(size: 200), width: 2, height: 2, now: t0)
        let b = try await store.put(url: "https://h/b.png", data: Fixtures.pngLike(size: 1000), now: t0 + 10)
        try await store.putVariant(parent: b.entry.cacheKey, spec: "s", data: Fixtures.pngLike(size: 100), width: 1, height: 1, now: t0 + 10)
        // 2400 bytes stored; 1000 more exceeds 3000 and evicts down to 1500, oldest first.
        try await store.put(url: "https://h/c.png", data: Fixtures.pngLike(size: 1000), now: t0 + 20)
        #expect(try await store.entry(forURL: "https://h/a.png") == nil)
        #expect(try await store.variants(of: a.entry.cacheKey).isEmpty)
        let stats = try await store.stats()
        // a's family (1300) leaves 2100 > 1500, so b and its variant go too: 5 rows.
        #expect(stats.evictions == 5)
        #expect(try await store.entry(forURL: "https://h/c.png") != nil)
        #expect(try await store.verify().remaining == 0)
    }

    @Test func purgeSelectors() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let now = Date()
        let a = try await store.put(url: "https://one.example/a.png", data: Fixtures.pngLike(size: 100), now: now - 86400 * 10)
        try await store.putVariant(parent: a.entry.cacheKey, spec: "s", data: Fixtures.pngLike(size: 10), width: 1, height: 1, now: now - 86400 * 10)
        let b = try await store.put(url: "https://two.example/b.png", data: Fixtures.pngLike(size: 200), now: now - 3600)
        try await store.putVariant(parent: b.entry.cacheKey, spec: "s", data: Fixtures.pngLike(size: 20), width: 1, height: 1, now: now)
        try await store.put(url: "https://two.example/c.png", data: Fixtures.pngLike(size: 300), now: now)

        await #expect(throws: StoreError.self) { try await store.purge(PurgeRequest()) }
        let dry = try await store.purge(PurgeRequest(olderThan: 86400, dryRun: true))
        #expect(dry == PurgeReport(removed: 2, originals: 1, variants: 1, bytes: 110, dryRun: true))
        #expect(try await store.stats().entries == 5)  // dry run touched nothing

        let variantsOnly = try await store.purge(PurgeRequest(host: "TWO.example", variantsOnly: true))
        #expect(variantsOnly.removed == 1 && variantsOnly.variants == 1)
        let byURL = try await store.purge(PurgeRequest(url: "HTTPS://one.example/a.png"))
        #expect(byURL == PurgeReport(removed: 2, originals: 1, variants: 1, bytes: 110, dryRun: false))
        let toSize = try await store.purge(PurgeRequest(toSize: 300))
        #expect(toSize.removed == 1 && toSize.bytes == 200)  // b (least recent) goes, c stays
        #expect(try await store.entry(forURL: "https://two.example/c.png") != nil)
        let all = try await store.purge(PurgeRequest(all: true))
        #expect(all.removed == 1)
        let stats = try await store.stats()
        #expect(stats.entries == 0 && stats.bytes == 0)
        #expect(try await store.verify().blobs == 0)
    }

    @Test func verifyFindsAndRepairsProblems() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, inlineMax: 0))
        let a = try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 100))
        let b = try await store.put(url: "https://h/b.png", data: Fixtures.pngLike(size: 100))
        let c = try await store.put(url: "https://h/c.png", data: Fixtures.pngLike(size: 100))
        try await store.put(url: "https://h/d.png", data: Fixtures.pngLike(size: 100))
        try FileManager.default.removeItem(atPath: store.filePath(of: a.entry))                 // missing blob
        try Data(repeating: 1, count: 5).write(to: URL(fileURLWithPath: store.filePath(of: b.entry)))  // size mismatch
        var corrupted = Fixtures.pngLike(size: 100)
        corrupted[50] ^= 0xFF
        try corrupted.write(to: URL(fileURLWithPath: store.filePath(of: c.entry)))               // hash mismatch
        try FileManager.default.createDirectory(atPath: dir.path + "/objects/ab/cd", withIntermediateDirectories: true)
        let orphan = dir.path + "/objects/ab/cd/" + String(repeating: "ab", count: 32) + "-1f"
        FileManager.default.createFile(atPath: orphan, contents: Data("orphan".utf8))
        // A temp file whose writer holds no lock (a pid-style name of an old version, a killed writer).
        FileManager.default.createFile(atPath: dir.path + "/tmp/999999-dead.part", contents: Data("x".utf8))

        let report = try await store.verify(hash: true)
        #expect(report.rows == 4)
        #expect(report.missingBlobs == 1)
        #expect(report.sizeMismatches == 1)
        #expect(report.hashMismatches == 1)
        #expect(report.orphanBlobs == 1)
        #expect(report.tempFiles == 1)
        #expect(report.remaining == 5)
        let repaired = try await store.verify(repair: true, hash: true)
        #expect(repaired.repaired == repaired.problemCount)
        let clean = try await store.verify(hash: true)
        #expect(clean.remaining == 0)
        #expect(clean.rows == 1)
        #expect(try await store.lookup(url: "https://h/d.png") != nil)
    }

    /// The repair's scan and hashing run on a read snapshot: a writer is not
    /// held up by them, and a blob it commits meanwhile is not taken for an
    /// orphan. The scan is held (a store hook) after reading its rows and
    /// before listing the blob files, while five file blobs and five inline
    /// ones commit: the listing then finds files no row of the snapshot names.
    @Test(.timeLimit(.minutes(3))) func verifyRepairDoesNotHoldWritersUpOrTakeNewBlobs() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        for i in 0..<20 {
            try await store.put(url: "http://v.test/\(i).png", data: Fixtures.pngLike(size: 100_000, seed: UInt8(i)))
        }
        let (reached, scanReached) = AsyncStream.makeStream(of: Void.self)
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }  // a failed write below must not leave the reader held
        // On the reader's thread (not the cooperative pool): blocking there is allowed.
        store.testSeams.withLock { $0.verifyRowsScanned = { scanReached.yield(); release.wait() } }
        let events = Locked<[String]>([])
        let verifying = Task {
            let report = try await store.verify(repair: true, hash: true)
            events.withLock { $0.append("verify") }
            return report
        }
        var iterator = reached.makeAsyncIterator()
        _ = await iterator.next()
        store.testSeams.withLock { $0.verifyRowsScanned = nil }
        for i in 0..<5 {
            try await store.put(url: "http://v.test/new\(i).png", data: Fixtures.pngLike(size: 100_000, seed: UInt8(100 + i)))
            try await store.put(url: "http://v.test/small\(i).png", data: Fixtures.pngLike(size: 1000, seed: UInt8(i)))
        }
        events.withLock { $0.append("writes") }
        release.signal()
        let report = try await verifying.value
        #expect(events.withLock { $0 } == ["writes", "verify"])
        #expect(report.rows == 20)
        #expect(report.orphanBlobs == 0 && report.repaired == 0 && report.remaining == 0)
        let after = try await store.verify(hash: true)
        #expect(after.remaining == 0 && after.rows == 30)
        #expect(try await store.lookup(url: "http://v.test/new4.png") != nil)
        try await store.close()
    }
}
