import Foundation
import GRDB
import Testing
@testable import ArtCacheCore
@testable import ArtCacheStore

/// A store's `deinit` does no I/O: it may run on any thread, Swift's
/// cooperative pool included. `close()` is where batched access times are
/// written; a store released without it loses only those (and logs so).
@Suite("Store: deinit writes nothing")
struct StoreDeinitTests {
    @Test func aStoreReleasedWithoutCloseLeavesTheIndexAsItWas() async throws {
        let dir = TempDir()
        let settings = Fixtures.settings(dir.path)
        let log = LogCounter()
        var store: CacheStore? = try await CacheStore.open(settings: settings, logger: log.logger)
        try await store?.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 200))
        #expect(try await store?.lookup(url: "https://h/a.png") != nil)  // a batched hit, not yet written
        #expect(try await store?.lookup(url: "https://h/b.png") == nil)  // a batched miss

        // Another connection sees any commit made to the index from now on (`data_version`).
        let observer = try DatabaseQueue(path: dir.path + "/index.sqlite")
        let version = { try observer.read { try Int.fetchOne($0, sql: "PRAGMA data_version") } }
        let before = try version()
        weak let released = store
        store = nil
        #expect(released == nil, "the store is still referenced: its deinit did not run")
        #expect(try version() == before, "the store's deinit committed to the index")
        #expect(log.count("access times") == 1, "the lost batch is not logged")

        let row = try observer.read { db in
            try Row.fetchOne(db, sql: """
                SELECT (SELECT hit_count FROM entry) AS hits_of_a, (SELECT value FROM counter WHERE name = 'hits') AS hits
                """)
        }
        #expect(row?["hits_of_a"] == 0)
        #expect(row?["hits"] as Int64? ?? 0 == 0)
    }
}
