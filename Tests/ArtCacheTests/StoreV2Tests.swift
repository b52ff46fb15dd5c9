@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import GRDB
import Testing

/// Store v2: inline blobs, one-level shards, group commit, set-based
/// eviction with bulk totals, incremental vacuum, the v1 migration.
@Suite("Store v2")
struct StoreV2Tests {
    @Test func blobsUpToInlineMaxLiveInTheDatabaseLargerOnesInOneLevelShards() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, inlineMax: 1000))
        // The 256 shard folders exist from the start: no write creates a directory.
        let shards = try FileManager.default.contentsOfDirectory(atPath: dir.path + "/objects")
        #expect(shards.count == 256)
        let small = try await store.put(url: "https://h/small.png", data: Fixtures.pngLike(size: 1000))
        let large = try await store.put(url: "https://h/large.png", data: Fixtures.pngLike(size: 1001))
        #expect(small.entry.isInline && small.entry.blob == nil)
        let blob = try #require(large.entry.blob)
        #expect(blob.hasPrefix("objects/\(large.entry.key.prefix(2))/\(large.entry.key)-"))
        #expect(blob.split(separator: "/").count == 3)
        #expect(FileManager.default.contents(atPath: store.filePath(of: large.entry)) == Fixtures.pngLike(size: 1001))
        #expect(try await store.lookup(url: "https://h/small.png")?.data == Fixtures.pngLike(size: 1000))
        #expect(try await store.lookup(url: "https://h/large.png")?.data == Fixtures.pngLike(size: 1001))
        // The blob files hold only the large one.
        #expect(store.blobs.allBlobs() == [blob])
        let stats = try await store.stats()
        #expect(stats.inlineBytes == 1000 && stats.fileBytes == 1001 && stats.bytes == 2001)

        // A new version that crosses the threshold moves: file -> inline and back.
        let shrunk = try await store.put(url: "https://h/large.png", data: Fixtures.pngLike(size: 500, seed: 3))
        #expect(shrunk.entry.isInline)
        #expect(!FileManager.default.fileExists(atPath: store.filePath(of: large.entry)))
        let grown = try await store.put(url: "https://h/small.png", data: Fixtures.pngLike(size: 5000, seed: 4))
        #expect(!grown.entry.isInline)
        let inlineRows = try await store.db.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM inline_blob") }
        #expect(inlineRows == 1)
        let after = try await store.stats()
        #expect(after.inlineBytes == 500 && after.fileBytes == 5000)
        #expect(try await store.verify(hash: true).remaining == 0)
    }

    @Test(.timeLimit(.minutes(3))) func concurrentPutsShareCommits() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, inlineMax: 2048))
        let before = store.writes.activity
        // Commits wait until all 64 puts are queued: then they share commits
        // whatever the timing (the first batch may hold one put only).
        let blocker = try CommitBlocker(cache: dir.path)
        // Half inline, half files, all at once.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    try await store.put(url: "https://h/\(index).png", data: Fixtures.pngLike(size: index.isMultiple(of: 2) ? 1000 : 4000,
                                                                                            seed: UInt8(index)))
                }
            }
            while store.writes.activity.puts - before.puts < 64 { await Task.yield() }
            blocker.release()
            try await group.waitForAll()
        }
        let activity = store.writes.activity
        #expect(activity.puts - before.puts == 64)
        #expect(activity.commits - before.commits < 64, "group commit: \(activity.commits - before.commits) commits for 64 puts")
        let stats = try await store.stats()
        #expect(stats.entries == 64)
        #expect(stats.inlineBytes == 32 * 1000 && stats.fileBytes == 32 * 4000)
        #expect(try await store.verify(hash: true).remaining == 0)
    }

    /// `[cache] sync`: either way, every file blob of a group commit is in
    /// place with its bytes once its put returns, and no temp file is left.
    @Test(arguments: CacheSettings.Sync.allCases)
    func everySyncModeCommitsCompleteFiles(_ sync: CacheSettings.Sync) async throws {
        let dir = TempDir()
        var settings = Fixtures.settings(dir.path, inlineMax: 0)
        settings.sync = sync
        let config = try Configuration.read(path: dir.write("sync.conf", "[cache]\nsync = \"\(sync.rawValue)\"\n"), environment: [:])
        #expect(config.cache.sync == sync)
        let store = try await CacheStore.open(settings: settings)
        let entries = try await withThrowingTaskGroup(of: CacheEntry.self, returning: [CacheEntry].self) { group in
            for index in 0..<24 {
                group.addTask {
                    try await store.put(url: "https://h/\(index).png", data: Fixtures.pngLike(size: 3000 + index, seed: UInt8(index))).entry
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for entry in entries {
            let index = Int(entry.url.dropFirst("https://h/".count).prefix { $0.isNumber })!
            #expect(FileManager.default.contents(atPath: store.filePath(of: entry)) == Fixtures.pngLike(size: 3000 + index, seed: UInt8(index)))
        }
        #expect(!store.blobs.temporaryFiles().contains { $0.path.hasSuffix(".part") })
        #expect(try await store.verify(hash: true).remaining == 0)
    }

    /// The group commit runs behind the answers: its thread is niced by 10
    /// (renders and answers go first on a busy machine), the rest of the
    /// process is not.
    @Test func theCommitThreadRunsAtALowerPriority() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, inlineMax: 0))
        try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 2000))  // the thread has run
        errno = 0
        let base = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        #expect(errno == 0)
        var niced: [Int] = []
        for task in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") {
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .newlines) == "artcache.commit",
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8) else { continue }
            // Fields after the command's closing parenthesis: state is field 3, nice field 19.
            let fields = stat[stat.range(of: ")", options: .backwards)!.upperBound...].split(separator: " ")
            niced.append(Int(fields[16])!)
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task"))?
            .compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) } ?? []
        #expect(!niced.isEmpty, "no artcache.commit thread among \(names)")
        #expect(niced.allSatisfy { $0 == min(19, Int(base) + 10) }, "nice values \(niced), process \(base)")
        withExtendedLifetime(store) {}
    }

    @Test func oneFailingPutDoesNotUndoItsBatch() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let parent = try await store.put(url: "https://h/p.png", data: Fixtures.pngLike(size: 100))
        let results = await withTaskGroup(of: Bool.self, returning: [Bool].self) { group in
            for index in 0..<16 {
                group.addTask {
                    do {
                        // Every fourth variant claims bytes the original never had.
                        try await store.putVariant(parent: parent.entry.cacheKey, spec: "\(index)x\(index)",
                                                   data: Fixtures.pngLike(size: 50), width: index, height: index,
                                                   sourceSHA256: index.isMultiple(of: 4) ? String(repeating: "0", count: 64) : nil)
                        return true
                    } catch {
                        return false
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { $0 }.count == 12)
        #expect(try await store.variants(of: parent.entry.cacheKey).count == 12)
        #expect(try await store.verify().remaining == 0)
    }

    /// A variant rendered from old bytes must not survive a newer original.
    @Test func variantOfReplacedBytesIsRefused() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let old = try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 300, seed: 1))
        // Rendered from `old`... while the original is replaced by new bytes.
        let new = try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 300, seed: 2))
        let error = await #expect(throws: StoreError.self) {
            try await store.putVariant(parent: old.entry.cacheKey, spec: "10x10", data: Fixtures.pngLike(size: 40),
                                       width: 10, height: 10, sourceSHA256: old.entry.sha256)
        }
        #expect(error?.code == .staleSource)
        #expect(try await store.variants(of: old.entry.cacheKey).isEmpty)
        let fresh = try await store.putVariant(parent: new.entry.cacheKey, spec: "10x10", data: Fixtures.pngLike(size: 40),
                                               width: 10, height: 10, sourceSHA256: new.entry.sha256)
        #expect(fresh.sourceSHA256 == new.entry.sha256)
    }

    @Test func evictionKeepsTotalsExactAndTakesVariants() async throws {
        let dir = TempDir()
        // 20 originals of 1000 bytes + a 100-byte variant each = 22000 bytes; the limit is 15000.
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, maxBytes: 15_000, inlineMax: 500))
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        for index in 0..<20 {
            let original = try await store.put(url: "https://h/\(index).png", data: Fixtures.pngLike(size: 1000, seed: UInt8(index)),
                                               now: base + Double(index))
            try await store.putVariant(parent: original.entry.cacheKey, spec: "1x1", data: Fixtures.pngLike(size: 100),
                                       width: 1, height: 1, now: base + Double(index))
        }
        let stats = try await store.stats()
        #expect(stats.bytes <= 15_000)
        #expect(stats.evictions > 0)
        // The totals row agrees with the rows, inline and file bytes alike.
        let (stored, counted) = try await store.db.read { (try Schema.totals($0), try Schema.recount($0)) }
        #expect(stored == counted)
        #expect(stats.inlineBytes == Int64(stats.variants) * 100 && stats.fileBytes == Int64(stats.originals) * 1000)
        // The newest survive; no variant outlives its original.
        #expect(try await store.entry(forURL: "https://h/19.png") != nil)
        #expect(try await store.entry(forURL: "https://h/0.png") == nil)
        let orphans = try await store.db.read {
            try Int.fetchOne($0, sql: "SELECT count(*) FROM entry v WHERE kind = 'variant' AND NOT EXISTS (SELECT 1 FROM entry o WHERE o.key = v.parent_key)")
        }
        #expect(orphans == 0)
        let report = try await store.verify(hash: true)
        #expect(report.remaining == 0 && report.totalsMismatch == 0)
    }

    @Test func verifyFindsAndRecountsDriftedTotals() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 100))
        try await store.db.write { try $0.execute(sql: "UPDATE totals SET bytes = bytes + 7") }
        #expect(try await store.verify().totalsMismatch == 1)
        #expect(try await store.verify(repair: true).repaired == 1)
        #expect(try await store.verify().remaining == 0)
        #expect(try await store.stats().bytes == 100)
    }

    /// Reads map the index (every connection, the writer's too), and a
    /// file that shrinks under the mapping (purge + incremental vacuum,
    /// below) is read correctly afterwards.
    @Test func readsMapTheIndex() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let mapped = try await store.db.read { try Int.fetchOne($0, sql: "PRAGMA mmap_size") ?? 0 }
        #expect(mapped > 0 && mapped <= CacheStore.indexMapBytes, "mmap_size \(mapped)")
        #expect(try await store.db.write { try Int.fetchOne($0, sql: "PRAGMA mmap_size") ?? 0 } == mapped)
        for index in 0..<40 {
            try await store.put(url: "https://h/\(index).png", data: Fixtures.pngLike(size: 50_000, seed: UInt8(index)))
        }
        let pages = { try await store.db.read { try Int.fetchOne($0, sql: "PRAGMA page_count") ?? 0 } }
        let full = try await pages()
        #expect(try await store.purge(PurgeRequest(toSize: 60_000)).removed == 39)  // the least recently used first
        #expect(try await pages() * 4 < full)
        let kept = try await store.lookup(url: "https://h/39.png")
        #expect(kept?.data == Fixtures.pngLike(size: 50_000, seed: 39))
        try await store.close()
    }

    @Test func purgedInlineBlobsGiveSpaceBack() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        #expect(try await store.db.read { try Int.fetchOne($0, sql: "PRAGMA auto_vacuum") } == 2)
        for index in 0..<200 {
            try await store.put(url: "https://h/\(index).png", data: Fixtures.pngLike(size: 50_000, seed: UInt8(index % 250)))
        }
        let pages = { try await store.db.read { try Int.fetchOne($0, sql: "PRAGMA page_count") ?? 0 } }
        let full = try await pages()
        let pageSize = try await store.db.read { try Int.fetchOne($0, sql: "PRAGMA page_size") ?? 4096 }
        #expect(full * pageSize > 10_000_000)
        let report = try await store.purge(PurgeRequest(all: true))
        #expect(report.removed == 200)
        let empty = try await pages()
        #expect(empty * 10 < full, "pages after purge: \(empty) of \(full)")
        try await store.close()
        let size = try FileManager.default.attributesOfItem(atPath: dir.path + "/index.sqlite")[.size] as? Int ?? .max
        #expect(size < 2_000_000, "index.sqlite is \(size) bytes after purging 10 MB of inline blobs")
    }
}

/// Opening a cache written by store v1 (two-level `objects/ab/cd/` files).
@Suite("Store v1 → v2 migration")
struct StoreMigrationTests {
    struct LegacyItem {
        let url: String
        let data: Data
        var key: String { try! NormalizedURL(url).key.hex }
        var blob: String { "objects/\(key.prefix(2))/\(key.dropFirst(2).prefix(2))/\(key)-0123abcd" }
    }

    /// A store v1 cache as artcache 0.1 wrote it: schema up to v3, every blob a file.
    static func makeV1Cache(_ path: String, items: [LegacyItem], missing: Set<String> = []) throws -> DatabasePool {
        try FileManager.default.createDirectory(atPath: path + "/tmp", withIntermediateDirectories: true)
        let pool = try DatabasePool(path: path + "/index.sqlite")
        try Schema.migrator.migrate(pool, upTo: "v3-fresh-for")
        try pool.write { db in
            for item in items {
                let url = try NormalizedURL(item.url)
                try db.execute(sql: """
                    INSERT INTO entry (key, url, host, kind, blob, content_type, size, sha256, created_at, accessed_at, hit_count)
                    VALUES (?, ?, ?, 'original', ?, 'image/png', ?, ?, 1, 1, 0)
                    """, arguments: [item.key, url.string, url.host, item.blob, item.data.count, CacheKey.sha256Hex(item.data)])
                guard !missing.contains(item.url) else { continue }
                let file = path + "/" + item.blob
                try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent,
                                                        withIntermediateDirectories: true)
                FileManager.default.createFile(atPath: file, contents: item.data)
            }
        }
        return pool
    }

    static let items = [
        LegacyItem(url: "https://h/small.png", data: Fixtures.pngLike(size: 2000, seed: 1)),
        LegacyItem(url: "https://h/large.png", data: Fixtures.pngLike(size: 90_000, seed: 2)),
        LegacyItem(url: "https://h/small2.png", data: Fixtures.pngLike(size: 3000, seed: 3)),
        LegacyItem(url: "https://h/gone.png", data: Fixtures.pngLike(size: 100, seed: 4)),
    ]

    @Test func openingAV1CacheMovesSmallBlobsInlineAndReshardsLargeOnes() async throws {
        let dir = TempDir()
        _ = try Self.makeV1Cache(dir.path, items: Self.items, missing: ["https://h/gone.png"])
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        for item in Self.items.prefix(3) {
            #expect(try await store.lookup(url: item.url)?.data == item.data)
        }
        #expect(try await store.entry(forURL: "https://h/small.png")?.isInline == true)
        let large = try #require(try await store.entry(forURL: "https://h/large.png"))
        #expect(large.blob == "objects/\(large.key.prefix(2))/\(large.key)-0123abcd")
        // The row whose v1 file was gone is dropped, not carried along.
        #expect(try await store.entry(forURL: "https://h/gone.png") == nil)
        // No v1 folder is left, and everything checks out.
        #expect(store.blobs.allBlobs() == [large.blob!])
        let report = try await store.verify(hash: true)
        #expect(report.remaining == 0, "\(report.problems)")
        let stats = try await store.stats()
        #expect(stats.entries == 3 && stats.inlineBytes == 5000 && stats.fileBytes == 90_000)
        #expect(try await store.db.read { try Int.fetchOne($0, sql: "PRAGMA auto_vacuum") } == 2)
        // New items go the v2 way.
        #expect(try await store.put(url: "https://h/new.png", data: Fixtures.pngLike(size: 10)).entry.isInline)
    }

    /// A migration cut anywhere resumes at the next open: here one blob was
    /// already moved inline (its v1 file not yet unlinked), one was linked to
    /// its new name but its row not yet committed, one not touched.
    @Test func anInterruptedMigrationResumes() async throws {
        let dir = TempDir()
        let pool = try Self.makeV1Cache(dir.path, items: Array(Self.items.prefix(3)))
        try Schema.migrator.migrate(pool)  // the schema step (v4) committed...
        let small = Self.items[0], large = Self.items[1]
        try await pool.write { db in       // ...one inline move committed...
            try db.execute(sql: "INSERT INTO inline_blob (key, data) VALUES (?, ?)", arguments: [small.key, small.data])
            try db.execute(sql: "UPDATE entry SET blob = NULL WHERE key = ?", arguments: [small.key])
            try db.execute(sql: "UPDATE totals SET inline_bytes = inline_bytes + ?", arguments: [small.data.count])
        }
        // ...and the large one linked, but killed before its row committed.
        try FileManager.default.createDirectory(atPath: dir.path + "/objects/\(large.key.prefix(2))", withIntermediateDirectories: true)
        #expect(link(dir.path + "/" + large.blob, dir.path + "/objects/\(large.key.prefix(2))/\(large.key)-0123abcd") == 0)
        try pool.close()

        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        for item in Self.items.prefix(3) {
            #expect(try await store.lookup(url: item.url)?.data == item.data)
        }
        let report = try await store.verify(hash: true)
        #expect(report.remaining == 0, "\(report.problems)")
        #expect(report.blobs == 3)
        #expect(try await store.stats().inlineBytes == 5000)
    }
}
