@testable import ArtCacheCore
@testable import ArtCacheStore
import Foundation
import GRDB
import Testing

/// Caches written at every earlier schema (v4, store v2, up to the one
/// before the current) open with the current code, and every row reads
/// back as it was written (issue 36, item 7). Each cache is built by GRDB's
/// migrator stopped at its version, then filled by SQL with the rows that
/// schema has, as the artcache of that version wrote them.
@Suite("Schema: caches from every earlier version open")
struct SchemaUpgradeTests {
    /// The migrations from `v4-store-v2` up to the current one, excluded:
    /// a migration added later joins this list by itself.
    static let versions: [String] = {
        let all = Schema.migrator.migrations
        let first = all.firstIndex(of: "v4-store-v2")!
        return Array(all[first..<(all.count - 1)])
    }()

    /// Whether the schema at `version` includes the migration `feature`.
    static func has(_ version: String, _ feature: String) -> Bool {
        let all = Schema.migrator.migrations
        return all.firstIndex(of: version)! >= all.firstIndex(of: feature)!
    }

    static let inline = (url: "https://h/inline.png", data: Fixtures.pngLike(size: 2000, seed: 1))
    static let file = (url: "https://h/file.png", data: Fixtures.pngLike(size: 90_000, seed: 2))
    static let smallVariant = (spec: "64x48", data: Fixtures.pngLike(size: 300, seed: 3))
    static let largeVariant = (spec: "800x600", data: Fixtures.pngLike(size: 70_000, seed: 4))
    static let missing = "https://h/missing.png"
    static let created = 1_700_000_000.0
    static let now = Date(timeIntervalSince1970: created + 600)

    static func key(_ url: String) throws -> CacheKey { try NormalizedURL.forStore(url).key }

    /// An entry row of the v4 columns (later columns keep their defaults).
    static func insertEntry(_ db: Database, dir: String, key: CacheKey, url: String, parent: CacheKey?, spec: String?,
                            data: Data, source: String?) throws {
        let normalized = try NormalizedURL.forStore(url)
        var blob: String?
        if data.count > 65_536 {
            let path = "objects/\(key.hex.prefix(2))/\(key.hex)-0123abcd"
            try FileManager.default.createDirectory(atPath: dir + "/objects/\(key.hex.prefix(2))", withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: dir + "/" + path, contents: data))
            blob = path
        }
        try db.execute(sql: """
            INSERT INTO entry (key, url, host, kind, parent_key, spec, blob, content_type, declared_type, size, sha256,
                source_sha256, width, height, etag, last_modified, expires_at, fresh_for, created_at, accessed_at, hit_count)
            VALUES (?, ?, ?, ?, ?, ?, ?, 'image/png', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 3)
            """, arguments: [
                key.hex, normalized.string, normalized.host, parent == nil ? "original" : "variant", parent?.hex, spec, blob,
                parent == nil ? "image/jpeg" : nil, data.count, CacheKey.sha256Hex(data), source,
                parent == nil ? 1600 : 64, parent == nil ? 1200 : 48, parent == nil ? "\"e-\(key.hex.prefix(6))\"" : nil,
                parent == nil ? "Tue, 14 Nov 2023 22:13:20 GMT" : nil, parent == nil ? created + 3600 : nil,
                parent == nil ? 3600.0 : nil, created, created + 100,
            ])
        if blob == nil {
            try db.execute(sql: "INSERT INTO inline_blob (key, data) VALUES (?, ?)", arguments: [key.hex, data])
        }
    }

    /// A cache at schema `version` (its last applied migration), holding:
    /// an inline and a file original, an inline and a file variant, a
    /// retry-queue row, and from their versions on a touch-log row,
    /// placeholders, a fetched rendition, stale rules and a negative answer.
    static func makeCache(_ dir: String, at version: String) async throws {
        try FileManager.default.createDirectory(atPath: dir + "/tmp", withIntermediateDirectories: true)
        let pool = try DatabasePool(path: dir + "/index.sqlite")
        try Schema.migrator.migrate(pool, upTo: version)
        let inlineKey = try key(inline.url), fileKey = try key(file.url)
        try await pool.write { db in
            try insertEntry(db, dir: dir, key: inlineKey, url: inline.url, parent: nil, spec: nil, data: inline.data, source: nil)
            try insertEntry(db, dir: dir, key: fileKey, url: file.url, parent: nil, spec: nil, data: file.data, source: nil)
            try insertEntry(db, dir: dir, key: CacheKey(parent: inlineKey, spec: smallVariant.spec), url: inline.url,
                            parent: inlineKey, spec: smallVariant.spec, data: smallVariant.data,
                            source: CacheKey.sha256Hex(inline.data))
            try insertEntry(db, dir: dir, key: CacheKey(parent: fileKey, spec: largeVariant.spec), url: file.url,
                            parent: fileKey, spec: largeVariant.spec, data: largeVariant.data,
                            source: CacheKey.sha256Hex(file.data))
            try db.execute(sql: """
                INSERT INTO retry_queue (url, reason, message, attempts, first_failed_at, last_failed_at)
                VALUES ('https://h/offline.png', 'timeout', 'timed out after 10 s', 2, ?, ?)
                """, arguments: [created, created + 60])
            if has(version, "v6-touch-log") {
                try db.execute(sql: "INSERT INTO touch_log (key, at, hits) VALUES (?, ?, 4)", arguments: [inlineKey.hex, created + 500])
            }
            if has(version, "v7-placeholders") {
                try db.execute(sql: "UPDATE entry SET color = '#336699', thumbhash = ? WHERE key = ?",
                               arguments: [Data([0x1f, 0x2e, 0x3d, 0x4c]), fileKey.hex])
            }
            if has(version, "v8-fetched-url") {
                try db.execute(sql: "UPDATE entry SET fetched_url = 'https://h/file.png?s=800', rendition = 800 WHERE key = ?",
                               arguments: [fileKey.hex])
            }
            if has(version, "v9-freshness") {
                try db.execute(sql: "UPDATE entry SET stale_while_revalidate = 60, stale_if_error = 86400, directives = 1 WHERE key = ?",
                               arguments: [inlineKey.hex])
                try db.execute(sql: """
                    INSERT INTO negative (key, url, reason, message, status, failed_at, until)
                    VALUES (?, ?, 'http_404', 'HTTP 404 from h', 404, ?, ?)
                    """, arguments: [try key(missing).hex, missing, created, created + 3600])
            }
            // Since v4 the code that writes keeps the totals (no trigger).
            try db.execute(sql: """
                UPDATE totals SET entries = 4, originals = 2, bytes = (SELECT sum(size) FROM entry),
                    inline_bytes = (SELECT sum(size) FROM entry WHERE blob IS NULL) WHERE id = 1
                """)
        }
        try pool.close()
    }

    /// (Three minutes, as its neighbours: alone it takes under a second,
    /// but a full run starts every suite at once and the opens wait their
    /// turn on the blocking pool; one CI run took over 60 s.)
    @Test(.timeLimit(.minutes(3)), arguments: versions)
    func aCacheFromAnEarlierSchemaOpensWithEveryRow(_ version: String) async throws {
        let dir = TempDir()
        try await Self.makeCache(dir.path, at: version)
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let applied = try await store.db.read { try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations") }
        #expect(applied == Schema.migrator.migrations)

        // The originals: their metadata as written.
        let inlineKey = try Self.key(Self.inline.url), fileKey = try Self.key(Self.file.url)
        let small = try #require(try await store.entry(forKey: inlineKey))
        let large = try #require(try await store.entry(forKey: fileKey))
        for (entry, data) in [(small, Self.inline.data), (large, Self.file.data)] {
            #expect(entry.kind == .original && entry.contentType == "image/png" && entry.declaredType == "image/jpeg")
            #expect(entry.size == Int64(data.count) && entry.sha256 == CacheKey.sha256Hex(data))
            #expect(entry.width == 1600 && entry.height == 1200)
            #expect(entry.etag == "\"e-\(entry.key.prefix(6))\"" && entry.lastModified == "Tue, 14 Nov 2023 22:13:20 GMT")
            #expect(entry.expiresAt == Date(timeIntervalSince1970: Self.created + 3600) && entry.freshFor == 3600)
            #expect(entry.createdAt == Date(timeIntervalSince1970: Self.created))
            #expect(entry.upgrade == .open)
        }
        #expect(small.isInline && large.blob == "objects/\(fileKey.hex.prefix(2))/\(fileKey.hex)-0123abcd")
        let placeholders = Self.has(version, "v7-placeholders")
        #expect(large.color == (placeholders ? "#336699" : nil))
        #expect(large.thumbHash == (placeholders ? Data([0x1f, 0x2e, 0x3d, 0x4c]) : nil))
        let fetched = Self.has(version, "v8-fetched-url")
        #expect(large.fetchedURL == (fetched ? "https://h/file.png?s=800" : nil) && large.rendition == (fetched ? 800 : nil))
        let freshness = Self.has(version, "v9-freshness")
        #expect(small.staleWhileRevalidate == (freshness ? 60 : nil) && small.staleIfError == (freshness ? 86400 : nil))
        #expect(small.mustRevalidate == freshness && !small.immutable)

        // The touch log folds into its row: the logged time, hits added.
        try await store.foldTouchLog()
        let touched = try #require(try await store.entry(forKey: inlineKey))
        let logged = Self.has(version, "v6-touch-log")
        #expect(touched.accessedAt == Date(timeIntervalSince1970: Self.created + (logged ? 500 : 100)))
        #expect(touched.hitCount == (logged ? 7 : 3))

        // The variants, with the originals' bytes they were made from.
        let smallVariants = try await store.variants(of: inlineKey)
        let largeVariants = try await store.variants(of: fileKey)
        #expect(smallVariants.map(\.spec) == [Self.smallVariant.spec] && largeVariants.map(\.spec) == [Self.largeVariant.spec])
        #expect(smallVariants.first?.sourceSHA256 == small.sha256 && largeVariants.first?.sourceSHA256 == large.sha256)
        #expect(smallVariants.first?.isInline == true && largeVariants.first?.isInline == false)

        // Every blob reads back: inline and file, originals and variants.
        #expect(try await store.lookup(url: Self.inline.url)?.data == Self.inline.data)
        #expect(try await store.lookup(url: Self.file.url)?.data == Self.file.data)
        #expect(try await store.lookup(key: CacheKey(parent: inlineKey, spec: Self.smallVariant.spec))?.data == Self.smallVariant.data)
        #expect(try await store.lookup(key: CacheKey(parent: fileKey, spec: Self.largeVariant.spec))?.data == Self.largeVariant.data)

        // The retry queue and the negative answer.
        let queued = try await store.retries.all()
        #expect(queued == [RetryItem(url: "https://h/offline.png", reason: "timeout", message: "timed out after 10 s", attempts: 2,
                                     firstFailedAt: Date(timeIntervalSince1970: Self.created),
                                     lastFailedAt: Date(timeIntervalSince1970: Self.created + 60))])
        let negative = try await store.negatives.answer(forKey: Self.key(Self.missing), now: Self.now)
        if freshness {
            #expect(negative == NegativeAnswer(url: Self.missing, reason: "http_404", message: "HTTP 404 from h", status: 404,
                                               failedAt: Date(timeIntervalSince1970: Self.created),
                                               until: Date(timeIntervalSince1970: Self.created + 3600)))
        } else {
            #expect(negative == nil)
        }

        // The totals agree with the rows, and everything checks out by hash.
        let stats = try await store.stats()
        #expect(stats.entries == 4 && stats.originals == 2)
        #expect(stats.inlineBytes == Int64(Self.inline.data.count + Self.smallVariant.data.count))
        #expect(stats.fileBytes == Int64(Self.file.data.count + Self.largeVariant.data.count))
        let report = try await store.verify(hash: true)
        #expect(report.remaining == 0 && report.totalsMismatch == 0, "\(report.problems)")
        try await store.close()
    }
}
