@testable import ArtCacheCore
@testable import ArtCacheStore
import Foundation
import GRDB
import Testing

/// Eviction by horizon: an eviction counts its items out and hides them in
/// one short transaction; the reclaimer deletes their rows, inline bytes and
/// files afterwards, a chunk per transaction.
@Suite("Eviction horizon and reclaimer")
struct ReclaimTests {
    private static let base = Date(timeIntervalSince1970: 1_700_000_000)

    /// Physical rows, evicted or live.
    private static func rowCount(_ store: CacheStore) async throws -> Int {
        try await store.db.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM entry") ?? -1 }
    }

    private static func totalsAgree(_ store: CacheStore) async throws -> Bool {
        try await store.db.read { try Schema.totals($0) == Schema.recount($0) }
    }

    @Test(.timeLimit(.minutes(3)))
    func evictionCountsOutAtOnceAndTheReclaimerDeletesLater() async throws {
        let dir = TempDir()
        // Items of 1000 bytes are files, of 100 inline; 20 entries fit, eviction goes down to 10.
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, maxEntries: 20, lowWater: 0.5, inlineMax: 500))
        let hold = DispatchSemaphore(value: 0)
        defer { hold.signal() }
        let (starts, started) = AsyncStream<Void>.makeStream()
        store.testSeams.withLock {
            $0.reclaimChunkStarting = { started.yield(); hold.wait() }
            $0.reclaimChunkRows = 4
        }
        var files: [String: String] = [:]
        for i in 0..<20 {
            let put = try await store.put(url: "https://h/\(i).png", data: Fixtures.pngLike(size: i.isMultiple(of: 2) ? 1000 : 100, seed: UInt8(i)),
                                          now: Self.base + Double(i))
            if let blob = put.entry.blob { files["\(i)"] = blob }
        }
        #expect(try await Self.rowCount(store) == 20)
        // The 21st entry: eleven go (down to 10), the oldest first.
        try await store.put(url: "https://h/20.png", data: Fixtures.pngLike(size: 100), now: Self.base + 20)
        var waiting = starts.makeAsyncIterator()
        _ = await waiting.next()  // the reclaimer holds before its first chunk

        let stats = try await store.stats()
        #expect(stats.entries == 10 && stats.evictions == 11)
        #expect(try await Self.totalsAgree(store))
        #expect(try await Self.rowCount(store) == 21)  // not deleted yet
        for gone in 0..<11 {
            #expect(try await store.lookup(url: "https://h/\(gone).png") == nil, "item \(gone)")
            #expect(try await store.entry(forURL: "https://h/\(gone).png") == nil, "item \(gone)")
        }
        for kept in 11...20 { #expect(try await store.lookup(url: "https://h/\(kept).png") != nil, "item \(kept)") }
        // An access time written for an evicted item does not bring it back.
        let evicted = try NormalizedURL.forStore("https://h/3.png").key.hex
        store.pending.withLock { $0.touch(evicted, at: Date(), capacity: 100) }
        try await store.flush()
        #expect(try await store.entry(forURL: "https://h/3.png") == nil)
        #expect(try await Self.totalsAgree(store))
        // A put of an evicted key replaces its row and is counted in.
        try await store.put(url: "https://h/4.png", data: Fixtures.pngLike(size: 1000, seed: 44), now: Self.base + 30)
        #expect(try await store.lookup(url: "https://h/4.png")?.data == Fixtures.pngLike(size: 1000, seed: 44))
        #expect(try await store.stats().entries == 11)
        #expect(try await Self.totalsAgree(store))
        // Verify sees no problem while evicted rows wait (their files are still there).
        #expect(try await store.verify(hash: true).remaining == 0)

        store.testSeams.withLock { $0.reclaimChunkStarting = nil }
        hold.signal()
        await store.waitForReclaim()
        #expect(try await Self.rowCount(store) == 11)
        for gone in [0, 2, 6, 8, 10] {
            #expect(!FileManager.default.fileExists(atPath: dir.path + "/" + files["\(gone)"]!), "file of \(gone)")
        }
        #expect(try await store.lookup(url: "https://h/4.png") != nil)  // replaced, not reclaimed
        #expect(try await store.stats().entries == 11)
        #expect(try await Self.totalsAgree(store))
        let report = try await store.verify(hash: true)
        #expect(report.remaining == 0 && report.rows == 11)
        try await store.close()
    }

    /// A variant newer than its original (rendered after the download) goes
    /// with it: counted out and hidden by the eviction, deleted by the reclaimer.
    @Test(.timeLimit(.minutes(3)))
    func anEvictedOriginalTakesItsNewerVariants() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, maxEntries: 4, lowWater: 0.5))
        let a = try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 100), now: Self.base)
        try await store.putVariant(parent: a.entry.cacheKey, spec: "s", data: Fixtures.pngLike(size: 10), width: 1, height: 1,
                                   now: Self.base + 100)
        for (index, name) in ["b", "c", "d"].enumerated() {
            try await store.put(url: "https://h/\(name).png", data: Fixtures.pngLike(size: 100), now: Self.base + Double(index + 1))
        }
        // 5 entries > 4: a, b and c go (down to 2), and a's variant with a.
        let stats = try await store.stats()
        #expect(stats.entries == 1 && stats.evictions == 4)
        #expect(try await store.variants(of: a.entry.cacheKey).isEmpty)
        #expect(try await Self.totalsAgree(store))
        await store.waitForReclaim()
        #expect(try await Self.rowCount(store) == 1)
        #expect(try await store.entry(forURL: "https://h/d.png") != nil)
        #expect(try await store.variants(of: a.entry.cacheKey).isEmpty)
        #expect(try await Self.totalsAgree(store))
        #expect(try await store.verify().remaining == 0)
        try await store.close()
    }

    /// A process stopped after an eviction committed and before its
    /// reclaimer finished leaves evicted rows: counted out and invisible to
    /// the next store, which deletes them once it checks its limits.
    @Test(.timeLimit(.minutes(3)))
    func evictedRowsLeftByAStoppedProcessAreReclaimedByTheNext() async throws {
        let dir = TempDir()
        let settings = Fixtures.settings(dir.path, inlineMax: 500)
        let first = try await CacheStore.open(settings: settings)
        var files: [String] = []
        for i in 0..<30 {
            let put = try await first.put(url: "https://h/\(i).png", data: Fixtures.pngLike(size: 1000, seed: UInt8(i)),
                                          now: Self.base + Double(i))
            files.append(try #require(put.entry.blob))
        }
        // What an eviction commits: the horizon past the ten oldest, the totals without them.
        try await first.db.write { db in
            try db.execute(sql: "UPDATE totals SET horizon = ?", arguments: [(Self.base + 9.5).timeIntervalSince1970])
            try Schema.recount(db).store(db)
        }
        try await first.close()

        let second = try await CacheStore.open(settings: settings)
        #expect(try await second.stats().entries == 20)
        #expect(try await second.lookup(url: "https://h/5.png") == nil)
        #expect(try await Self.rowCount(second) == 30)
        try await second.enforceLimits()  // under its limits: it only starts the reclaimer
        await second.waitForReclaim()
        #expect(try await Self.rowCount(second) == 20)
        for (i, file) in files.enumerated() {
            #expect(FileManager.default.fileExists(atPath: dir.path + "/" + file) == (i >= 10), "file of \(i)")
        }
        #expect(try await Self.totalsAgree(second))
        #expect(try await second.verify().remaining == 0)
        try await second.close()
    }

    /// Eviction moves the horizon from one walk of the LRU index: the
    /// oldest rows up to what must go, rows of one instant together, and
    /// every row older than the age limit.
    @Test func theHorizonWalkTakesWhatMustGoAndTiesTogether() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        for i in 0..<10 {
            // Two items per instant: 0 and 1 at base, 2 and 3 at base + 1, ...
            try await store.put(url: "https://h/\(i).png", data: Fixtures.pngLike(size: 100), now: Self.base + Double(i / 2))
        }
        let (horizon, removed) = try await store.db.read { db in
            try EntryRows.raiseHorizon(db, entries: 3, bytes: 0, below: -.infinity)
        }
        #expect(removed.entries == 4 && removed.bytes == 400)  // the third item's instant takes the fourth too
        #expect(horizon > (Self.base + 1).timeIntervalSince1970 && horizon < (Self.base + 2).timeIntervalSince1970)
        let aged = try await store.db.read { db in
            try EntryRows.raiseHorizon(db, entries: 0, bytes: 0, below: (Self.base + 3).timeIntervalSince1970)
        }
        #expect(aged.1.entries == 6)
        let none = try await store.db.read { db in try EntryRows.raiseHorizon(db, entries: 0, bytes: 0, below: -.infinity) }
        #expect(none.1.entries == 0 && none.0 == 0)
        try await store.close()
    }
}
