@testable import ArtCacheCore
@testable import ArtCachePipeline
@testable import ArtCacheStore
import Foundation
import GRDB
import Testing

/// A cache written by a newer artcache (a schema migration this build does
/// not know) is refused with `incompatible_schema`, and left as it was:
/// no migration, no vacuum, no row or blob touched (issue 36, item 7).
@Suite("Schema: a newer cache is refused")
struct SchemaRefusalTests {
    /// Every file of the cache directory with its bytes (the locks, the
    /// space reserve and SQLite's shared-memory index of the WAL aside: they
    /// carry no data, and a reader may rewrite the last).
    static func snapshot(_ path: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let root = URL(fileURLWithPath: path)
        let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = walker?.nextObject() as? URL {
            guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            let relative = String(url.path.dropFirst(root.path.count + 1))
            guard !relative.hasSuffix("lock"), !relative.hasPrefix("reserve"), !relative.hasSuffix("-shm") else { continue }
            files[relative] = try Data(contentsOf: url)
        }
        return files
    }

    @Test func aCacheFromANewerSchemaIsRefusedAndLeftUntouched() async throws {
        let dir = TempDir()
        let settings = Fixtures.settings(dir.path, inlineMax: 1000)
        let store = try await CacheStore.open(settings: settings)
        try await store.put(url: "https://h/small.png", data: Fixtures.pngLike(size: 500, seed: 1))
        try await store.put(url: "https://h/large.png", data: Fixtures.pngLike(size: 5000, seed: 2))
        try await store.close()

        // What a newer artcache would leave: one more migration applied (here
        // a column this build does not know), recorded by GRDB's migrator.
        let current = Schema.migrator.migrations
        let future = "v\(current.count + 1)-from-the-future"
        let pool = try DatabasePool(path: dir.path + "/index.sqlite")
        try await pool.write { db in
            try db.execute(sql: "ALTER TABLE entry ADD COLUMN from_the_future TEXT")
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [future])
        }
        try pool.close()
        let before = try Self.snapshot(dir.path)
        #expect(before.keys.contains("index.sqlite") && before.count >= 2, "\(before.keys.sorted())")

        let error = await #expect(throws: StoreError.self) {
            try await CacheStore.open(settings: settings)
        }
        #expect(error?.code == .incompatibleSchema)
        #expect(error?.code.rawValue == "incompatible_schema")
        #expect(error?.message.contains("newer artcache") == true, "\(String(describing: error))")
        // Refused twice the same way (the first refusal left nothing half done).
        let again = await #expect(throws: StoreError.self) { try await CacheStore.open(settings: settings) }
        #expect(again?.code == .incompatibleSchema)

        // Nothing changed: the index's bytes, the blob files, the rows.
        let after = try Self.snapshot(dir.path)
        #expect(after == before, "changed: \(Set(after.keys).symmetricDifference(before.keys).sorted()) or their bytes")
        let check = try DatabaseQueue(path: dir.path + "/index.sqlite")
        let (entries, applied) = try await check.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM entry") ?? 0,
             try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
        }
        #expect(entries == 2)
        #expect(applied == current + [future])
        try check.close()

        // The library says the same code (`ArtCacheError.Code.incompatibleSchema`), and the CLI fails with it.
        do {
            let pipeline = try await ImagePipeline.open(configuration: Fixtures.configuration(dir.path))
            try await pipeline.close()
            Issue.record("a newer cache was opened")
        } catch {
            #expect(error.code == .incompatibleSchema && error.reason == "incompatible_schema", "\(error)")
        }
        let stats = try await CLI.run(["stats", "--cache-dir", dir.path])
        #expect(stats.status == 1 && stats.stderr.contains("newer artcache"), "\(stats.stderr)")
    }
}
