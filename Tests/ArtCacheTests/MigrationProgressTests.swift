import Foundation
import GRDB
import Testing
@testable import ArtCacheCore
@testable import ArtCacheStore

/// The v1 → v2 blob migration always makes progress: a row whose path looks
/// like v1's layout to SQL (`LIKE 'objects/__/__/%'`) but is no v1 blob path
/// must not be fetched again and again, or every open of the cache hangs.
@Suite("Store v1 → v2 migration: rows that are not v1 blob paths", .serialized)
struct MigrationProgressTests {
    /// One damaged row each: five path components (the LIKE matches, it is
    /// no v1 path: the loop fetched it forever); a v1-shaped path whose name
    /// is no blob name, small (its read threw: every open failed) and large.
    @Test(.timeLimit(.minutes(5)), arguments: zip([
        "objects/ab/cd/ef/\(String(repeating: "e", count: 64))-1",
        "objects/ab/cd/not-a-blob-name",
        "objects/ab/cd/also-not-a-blob-name",
    ], [100, 100, 200_000]))
    func aRowMatchingTheLikeButNoLegacyBlobPathDoesNotStopTheOpen(blob: String, size: Int) async throws {
        let dir = TempDir()
        let items = Array(StoreMigrationTests.items.prefix(3))
        let pool = try StoreMigrationTests.makeV1Cache(dir.path, items: items)
        try Schema.migrator.migrate(pool)  // the schema step: sets the `legacy_layout` marker
        let odd = try NormalizedURL("https://h/damaged.png")
        try await pool.write { db in
            try db.execute(sql: """
                INSERT INTO entry (key, url, host, kind, blob, content_type, size, sha256, created_at, accessed_at, hit_count)
                VALUES (?, ?, ?, 'original', ?, 'image/png', ?, ?, 1, 1, 0)
                """, arguments: [odd.key.hex, odd.string, odd.host, blob, size, String(repeating: "0", count: 64)])
            try db.execute(sql: "UPDATE totals SET entries = entries + 1, originals = originals + 1, bytes = bytes + ?",
                           arguments: [size])
        }
        #expect(try await pool.read { try Int.fetchOne($0, sql: "SELECT value FROM counter WHERE name = 'legacy_layout'") } == 1)
        try pool.close()

        // Opened by another process, so a hang is cut at the deadline instead of hanging the run.
        let result = try await CLI.runBounded(["verify", "--cache-dir", dir.path, "--json"], seconds: 120)
        let finished = try #require(result, "opening the cache did not finish within 120 s (the migration loops)")
        #expect(finished.status == 0, "\(finished.stdout) \(finished.stderr)")

        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        for item in items { #expect(try await store.lookup(url: item.url)?.data == item.data) }
        // The damaged row named no readable blob: dropped, as `verify --repair` would.
        #expect(try await store.entry(forURL: odd.string) == nil)
        #expect(try await store.db.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM counter WHERE name = 'legacy_layout'") } == 0)
        let report = try await store.verify(hash: true)
        #expect(report.remaining == 0, "\(report.problems)")
        #expect(report.rows == items.count)
        try await store.close()
    }
}
