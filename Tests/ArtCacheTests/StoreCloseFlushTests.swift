import Foundation
import GRDB
import Testing
@testable import ArtCacheCore
@testable import ArtCacheStore

/// `close()` is the last chance for batched access times: a service's
/// closer task is cancelled when the shutdown grace ends, and the flush must
/// not give up then.
@Suite("Store: close flushes whatever the caller's cancellation")
struct StoreCloseFlushTests {
    @Test func closeFromACancelledTaskStillWritesHitsAndAccessTimes() async throws {
        let dir = TempDir()
        let settings = Fixtures.settings(dir.path)
        let store = try await CacheStore.open(settings: settings)
        let long = Date(timeIntervalSince1970: 1_000_000_000)
        for index in 0..<3 {
            try await store.put(url: "https://h/\(index).png", data: Fixtures.pngLike(size: 200, seed: UInt8(index)), now: long)
        }
        for index in 0..<3 { #expect(try await store.lookup(url: "https://h/\(index).png") != nil) }
        #expect(try await store.lookup(url: "https://h/missing.png") == nil)

        // The closer runs in a task that is already cancelled (the grace period is over).
        let failure = await Task { () async -> String? in
            withUnsafeCurrentTask { $0?.cancel() }
            #expect(Task.isCancelled)
            do {
                try await store.close()
                return nil
            } catch {
                return "\(error)"
            }
        }.value
        #expect(failure == nil, "close() from a cancelled task failed: \(failure ?? "")")

        let reopened = try await CacheStore.open(settings: settings)
        let stats = try await reopened.stats()
        #expect(stats.hits == 3 && stats.misses == 1)
        for index in 0..<3 {
            let entry = try #require(try await reopened.entry(forURL: "https://h/\(index).png"))
            #expect(entry.hitCount == 1)
            #expect(entry.accessedAt > long.addingTimeInterval(86_400), "access time not written: \(entry.accessedAt)")
        }
        try await reopened.close()
    }
}
