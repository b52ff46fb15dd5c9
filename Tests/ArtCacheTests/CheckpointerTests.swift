@testable import ArtCacheCore
@testable import ArtCacheStore
import Foundation
import GRDB
import Testing

/// The index's WAL checkpointed off the commit thread (``Checkpointer``).
@Suite("Index checkpoints", .timeLimit(.minutes(2)))
struct CheckpointerTests {
    @Test func committedInlineBytesStartACheckpointOffTheCommitThread() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let checkpointer = try #require(store.checkpointer)
        #expect(checkpointer.checkpoints == 0)
        // 110 inline originals of 40 KB: past the 4 MB a checkpoint waits for.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<110 {
                group.addTask { _ = try await store.put(url: "https://h/\(index).png", data: Fixtures.pngLike(size: 40_000, seed: UInt8(index))) }
            }
            try await group.waitForAll()
        }
        #expect(checkpointer.checkpoints >= 1)
        // The writer's own checkpoint is the bound behind it, 4x as far out.
        let pages = try await store.db.write { try Int.fetchOne($0, sql: "PRAGMA wal_autocheckpoint") }
        #expect(pages == Checkpointer.writerFallbackPages)
        try await store.close()
        let again = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        for index in [0, 55, 109] {
            #expect(try await again.lookup(url: "https://h/\(index).png")?.data == Fixtures.pngLike(size: 40_000, seed: UInt8(index)))
        }
        try await again.close()
    }
}
