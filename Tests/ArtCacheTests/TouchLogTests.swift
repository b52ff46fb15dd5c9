import Foundation
import GRDB
import Testing
@testable import ArtCacheCore
@testable import ArtCacheStore

/// Access times are appended to the touch log by a flush, written into
/// their rows by a fold (or by `close()` when the log is small), and read
/// by eviction before it moves the horizon.
@Suite("Store: access times go through a touch log")
struct TouchLogTests {
    let base = Date(timeIntervalSince1970: 1_700_000_000)

    /// (accessed_at, hit_count) of `key`'s row and the touch log's rows, read by another connection.
    func read(_ dir: TempDir, _ key: String) throws -> (at: Double?, hits: Int?, log: [Row]) {
        let observer = try DatabaseQueue(path: dir.path + "/index.sqlite")
        return try observer.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT accessed_at, hit_count FROM entry WHERE key = ?", arguments: [key])
            let log = try Row.fetchAll(db, sql: "SELECT key, at, hits FROM touch_log ORDER BY id")
            return (row?["accessed_at"], row?["hit_count"], log)
        }
    }

    func boundaries(_ dir: TempDir, chunk: Int) throws -> [String] {
        try DatabaseQueue(path: dir.path + "/index.sqlite").read { try TouchLog.boundaries($0, chunk: chunk) }
    }

    @Test func aFlushAppendsToTheLogAndCloseFoldsItIntoTheRow() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let key = try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 100), now: base).entry.key
        let before = Date()
        #expect(try await store.lookup(url: "https://h/a.png") != nil)
        try await store.flush()

        let flushed = try read(dir, key)
        #expect(flushed.at == base.timeIntervalSince1970, "a flush wrote the row")
        #expect(flushed.hits == 0)
        #expect(flushed.log.count == 1)
        #expect(flushed.log.first?["key"] == key)
        #expect(flushed.log.first?["hits"] == 1)
        #expect((flushed.log.first?["at"] as Double? ?? 0) >= before.timeIntervalSince1970)

        try await store.close()
        let closed = try read(dir, key)
        #expect((closed.at ?? 0) >= before.timeIntervalSince1970, "close did not fold the log")
        #expect(closed.hits == 1)
        #expect(closed.log.isEmpty)
    }

    @Test func evictionKeepsWhatTheLogShowsUsed() async throws {
        let dir = TempDir()
        // 3 items fit; a 4th evicts down to 2 (90% of 3): the two least recently used.
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, maxEntries: 3))
        var keys: [String] = []
        for (index, name) in ["a", "b", "c"].enumerated() {
            keys.append(try await store.put(url: "https://h/\(name).png", data: Fixtures.pngLike(size: 100, seed: UInt8(index)),
                                            now: base + Double(index)).entry.key)
        }
        // "a" (the oldest row) is used after the others, but only the log says so.
        store.touch(keys[0], at: base + 10)
        try await store.flush()
        #expect(try read(dir, keys[0]).at == base.timeIntervalSince1970)

        try await store.put(url: "https://h/d.png", data: Fixtures.pngLike(size: 100, seed: 9), now: base + 3)
        #expect(try await store.stats().evictions == 2)
        #expect(try await store.entry(forURL: "https://h/a.png") != nil, "a row the log shows used was evicted")
        #expect(try await store.entry(forURL: "https://h/b.png") == nil)
        #expect(try await store.entry(forURL: "https://h/c.png") == nil)
        #expect(try await store.entry(forURL: "https://h/d.png") != nil)
        // Rescued: the row moved up to its logged time; the log keeps it until a fold.
        let rescued = try read(dir, keys[0])
        #expect(rescued.at == (base + 10).timeIntervalSince1970)
        #expect(rescued.log.count == 1)
        try await store.close()
    }

    @Test func aFoldInChunksWritesEachKeyOnceWithItsLatestTimeAndAllItsHits() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        store.testSeams.withLock { $0.touchLogFoldChunk = 2 }
        let later = Date().addingTimeInterval(86_400)  // after any lookup's own time
        var keys: [String] = []
        for index in 0..<5 {
            let url = "https://h/\(index).png"
            keys.append(try await store.put(url: url, data: Fixtures.pngLike(size: 100, seed: UInt8(index)), now: base).entry.key)
            #expect(try await store.lookup(url: url) != nil)  // one hit each
            store.touch(keys[index], at: later + Double(index))
        }
        try await store.flush()
        for index in 0..<5 { store.touch(keys[index], at: later + 100 + Double(index)) }
        #expect(try await store.lookup(url: "https://h/0.png") != nil)  // a second hit for item 0
        try await store.flush()
        #expect(try read(dir, keys[0]).log.count == 10)

        // Five keys, two per transaction: three ranges, cut at the 3rd and 5th key.
        let bounds = try boundaries(dir, chunk: 2)
        let sorted = keys.sorted()
        #expect(bounds == [sorted[2], sorted[4]])

        try await store.foldTouchLog()
        for index in 0..<5 {
            let folded = try read(dir, keys[index])
            #expect(folded.at == (later + 100 + Double(index)).timeIntervalSince1970, "item \(index)")
            #expect(folded.hits == (index == 0 ? 2 : 1), "item \(index)")
            #expect(folded.log.isEmpty)
        }
        // A second fold finds nothing to add.
        try await store.foldTouchLog()
        #expect(try read(dir, keys[0]).hits == 2)
        try await store.close()
    }

    @Test func purgeByAgeSeesTheLoggedTimes() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let now = Date()
        let old = try await store.put(url: "https://h/old.png", data: Fixtures.pngLike(size: 100), now: now - 7200).entry.key
        try await store.put(url: "https://h/gone.png", data: Fixtures.pngLike(size: 100, seed: 1), now: now - 7200)
        store.touch(old, at: now)
        try await store.flush()
        let report = try await store.purge(PurgeRequest(olderThan: 3600), now: now)
        #expect(report.removed == 1)
        #expect(try await store.entry(forURL: "https://h/old.png") != nil, "purge --older-than ignored the log")
        #expect(try await store.entry(forURL: "https://h/gone.png") == nil)
        try await store.close()
    }

    /// A store that touched nothing (a `stats`, a `get` of nothing) takes no
    /// write lock at close: another process holding one does not delay it.
    /// Before, close folded the empty log in a write transaction and waited
    /// out the busy timeout (60 s) behind the writer, then logged a warning.
    @Test(.timeLimit(.minutes(3)))
    func closeTakesNoWriteLockWhenTheLogIsEmpty() async throws {
        let dir = TempDir()
        let first = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        try await first.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 100), now: base)
        try await first.close()

        let logs = LogCounter()
        let reader = try await CacheStore.open(settings: Fixtures.settings(dir.path), logger: logs.logger)
        #expect(try await reader.entry(forURL: "https://h/a.png") != nil)
        var holder = Configuration()
        holder.allowsUnsafeTransactions = true  // the transaction outlives one access: it is the point
        let writer = try DatabaseQueue(path: dir.path + "/index.sqlite", configuration: holder)
        try await writer.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }
        try await reader.close()
        try await writer.writeWithoutTransaction { try $0.execute(sql: "ROLLBACK") }
        #expect(logs.count("touch log") == 0)
    }
}
