import Foundation
import GRDB
import Testing
@testable import ArtCacheCore
@testable import ArtCacheStore

/// `close()` quiesces the write path: puts already admitted commit (or fail)
/// before it returns, later ones fail with a typed `closed`, and no temp file
/// is ever written under the writer lock it released.
@Suite("Store: close quiesces puts")
struct StoreCloseQuiesceTests {
    enum Outcome: Sendable {
        /// Returned committed.
        case committed(url: String, data: Data)
        case failed(any Error)
    }

    @Test(.timeLimit(.minutes(5))) func putsRacingCloseCommitBeforeItReturnsOrFailTyped() async throws {
        let dir = TempDir()
        let settings = Fixtures.settings(dir.path, inlineMax: 1000)
        let store = try await CacheStore.open(settings: settings)
        let (firstCommit, signal) = AsyncStream<Void>.makeStream()

        /// One put of item `index`: half inline, half file blobs (temp files while in flight).
        let put = { @Sendable (index: Int) async -> Outcome in
            let url = "https://h/\(index).png"
            let data = Fixtures.pngLike(size: index.isMultiple(of: 2) ? 500 : 50_000, seed: UInt8(index % 256))
            do {
                try await store.put(url: url, data: data)
                signal.yield()
                return .committed(url: url, data: data)
            } catch {
                return .failed(error)
            }
        }
        // What the index held the moment close() returned. A put's own return
        // is resumed on the pool some time after its commit, so when it runs
        // says nothing about when it committed: the index does.
        let atClose = { @Sendable () throws -> Set<String> in
            let index = try DatabaseQueue(path: dir.path + "/index.sqlite")
            return try Set(index.read { try String.fetchAll($0, sql: "SELECT url FROM entry") })
        }
        let (outcomes, indexedAtClose) = await withTaskGroup(
            of: ([Outcome], Set<String>?).self, returning: ([Outcome], Set<String>).self
        ) { group in
            for index in 0..<64 {
                group.addTask { ([await put(index)], nil) }
            }
            group.addTask {
                // Close once puts are committing, with others still queued or
                // writing, while a second wave of puts arrives.
                for await _ in firstCommit { break }
                return await withTaskGroup(
                    of: ([Outcome], Set<String>?).self, returning: ([Outcome], Set<String>?).self
                ) { wave in
                    wave.addTask {
                        let result: Void? = try? await store.close()
                        #expect(result != nil, "close() failed")
                        let indexed = try? atClose()
                        #expect(indexed != nil, "the index could not be read after close()")
                        return ([], indexed ?? [])
                    }
                    for index in 64..<96 { wave.addTask { ([await put(index)], nil) } }
                    return await wave.reduce(into: ([], nil)) { all, one in
                        all.0 += one.0
                        all.1 = all.1 ?? one.1
                    }
                }
            }
            var outcomes: [Outcome] = []
            var indexedAtClose: Set<String> = []
            for await (some, indexed) in group {
                outcomes += some
                if let indexed { indexedAtClose = indexed }
            }
            return (outcomes, indexedAtClose)
        }
        #expect(outcomes.count == 96)
        // A put after close() returned fails, typed.
        let late = await #expect(throws: StoreError.self) {
            try await store.put(url: "https://h/late.png", data: Fixtures.pngLike(size: 50_000))
        }
        #expect(late?.code == .closed)
        #expect(ArtCacheError(late ?? StoreError(.io, "none")).code == .cancelled)

        var committed: [(String, Data)] = []
        for outcome in outcomes {
            switch outcome {
            case .committed(let url, let data):
                // Admitted before close: committed before close returned, under the live writer lock.
                #expect(indexedAtClose.contains(url), "\(url) returned committed but was not in the index when close() returned")
                committed.append((url, data))
            case .failed(let error):
                #expect((error as? StoreError)?.code == .closed, "a put failed untyped: \(error)")
            }
        }
        #expect(!committed.isEmpty)
        // Nothing of this store is left in tmp/: no temp file, no writer lock.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path + "/tmp")
        #expect(leftovers.isEmpty, "left in tmp/: \(leftovers)")

        let reopened = try await CacheStore.open(settings: settings)
        for (url, data) in committed {
            #expect(try await reopened.lookup(url: url)?.data == data, "\(url) returned committed but is missing")
        }
        let report = try await reopened.verify(hash: true)
        #expect(report.problemCount == 0, "\(report.problems)")
        #expect(report.rows == committed.count)
        try await reopened.close()
    }
}
