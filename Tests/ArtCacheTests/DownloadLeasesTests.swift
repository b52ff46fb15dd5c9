@testable import ArtCacheCore
@testable import ArtCacheStore
import Foundation
import GRDB
import Testing

/// The index's download leases (``DownloadLeases``): answered as one at a
/// time would be, written together (issue 51 §4: two transactions per
/// download were most of a prefetch's index work).
@Suite("Download leases", .timeLimit(.minutes(2)))
struct DownloadLeasesTests {
    @Test func twoStoresOnOneCacheTakeTurnsAndShareAFailure() async throws {
        let dir = TempDir()
        let a = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let b = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        #expect(try await a.leases.claim(key: "k", url: "https://h/k.jpg", for: 60) == .acquired)
        #expect(try await a.leases.claim(key: "k", url: "https://h/k.jpg", for: 60) == .acquired, "its own: still its")
        guard case .held(let pid, _) = try await b.leases.claim(key: "k", url: "https://h/k.jpg", for: 60) else {
            Issue.record("another store's live lease is held")
            return
        }
        #expect(pid == getpid())
        // Given up with a failure that lingers: a waiter takes it, a newcomer downloads anew.
        try await a.leases.release(key: "k", failure: (reason: "http_503", message: "503"), linger: 60)
        #expect(try await b.leases.claim(key: "k", url: "https://h/k.jpg", for: 60, waited: true)
            == .failed(pid: getpid(), reason: "http_503", message: "503"))
        #expect(try await b.leases.claim(key: "k", url: "https://h/k.jpg", for: 60) == .acquired)
        try await b.leases.release(key: "k")
        #expect(try await a.leases.count() == 0)
        // A lapsed lease is anyone's.
        #expect(try await a.leases.claim(key: "old", url: "https://h/o.jpg", for: 1, now: Date(timeIntervalSinceNow: -10)) == .acquired)
        #expect(try await b.leases.claim(key: "old", url: "https://h/o.jpg", for: 60) == .acquired)
        try await a.close()
        try await b.close()
    }

    /// Claims that arrive while the writer is busy go in one transaction
    /// together, each answered as if alone.
    @Test func claimsWaitingForTheWriterCommitTogether() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        let before = store.leases.activity.batches
        // The writer held: every claim below waits for it.
        let (entered, enter) = AsyncStream.makeStream(of: Void.self)
        let gate = DispatchSemaphore(value: 0)
        let holder = Task {
            try await store.db.writeWithoutTransaction { _ in
                enter.yield()
                gate.wait()
            }
        }
        for await _ in entered { break }
        let claims = Task {
            try await withThrowingTaskGroup(of: DownloadLeases.Claim.self) { group in
                for index in 0..<50 {
                    group.addTask { try await store.leases.claim(key: "k\(index)", url: "https://h/\(index).jpg", for: 60) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        while store.leases.activity.waiting < 50 { await Task.yield() }
        gate.signal()
        try await holder.value
        let results = try await claims.value
        #expect(results.count == 50 && results.allSatisfy { $0 == .acquired })
        #expect(store.leases.activity.batches - before == 1, "one transaction for the 50")
        #expect(try await store.leases.count() == 50)
        try await store.close()
    }
}
