import Foundation
import Testing
@testable import ArtCache

/// Several processes on one cache directory, and crashes.
@Suite("Processes sharing a cache", .serialized)
struct ProcessTests {
    @Test func twoProcessesWriteOneCache() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        let a = try CLI.start(["--cache-dir", cache, "--count", "150", "--prefix", "http://a.test/", "--variants"], executable: CLI.stress)
        let b = try CLI.start(["--cache-dir", cache, "--count", "150", "--prefix", "http://b.test/"], executable: CLI.stress)
        // And a purge of another host running at the same time.
        let c = try CLI.start(["purge", "--cache-dir", cache, "--host", "nothing.test"])
        for (process, _, err) in [a, b, c] {
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(stderr)")
            #expect(!stderr.contains("busy"), "\(stderr)")
        }
        let store = try await CacheStore.open(settings: Fixtures.settings(cache))
        let stats = try await store.stats()
        #expect(stats.originals == 300)
        #expect(stats.variants == 150)
        #expect(stats.hosts["a.test"]?.entries == 300)
        #expect(stats.hosts["b.test"]?.entries == 150)
        let report = try await store.verify(hash: true)
        #expect(report.remaining == 0)
        #expect(report.blobs == 450)
    }

    /// SIGKILL a writer again and again: afterwards every row points at a
    /// complete blob of its recorded size; leftovers are cleaned by repair.
    @Test func sigkilledWritersLeaveAConsistentIndex() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        for round in 0..<8 {
            let (process, out, _) = try CLI.start(["--cache-dir", cache, "--count", "100000", "--progress",
                                                   "--size", "20000", "--prefix", "http://crash.test/\(round)/", "--variants"], executable: CLI.stress)
            // Kill it mid-flight once it has reported a few stored items (a different number each round).
            let reached = await CLI.waitForLines(out, count: 3 + round * 4)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(reached)
            #expect(process.terminationReason == .uncaughtSignal)
        }
        let result = try CLI.run(["verify", "--cache-dir", cache, "--hash", "--json"])
        let report = try JSONDecoder.snake.decode(VerifyReport.self, from: Data(result.stdout.utf8))
        #expect(report.rows > 40)
        // The index itself never lies: no row without its complete blob.
        #expect(report.missingBlobs == 0)
        #expect(report.sizeMismatches == 0)
        #expect(report.hashMismatches == 0)
        let repaired = try CLI.run(["verify", "--cache-dir", cache, "--repair", "--json"])
        #expect(repaired.status == 0, "\(repaired.stderr)")
        let clean = try CLI.run(["verify", "--cache-dir", cache, "--hash", "--json"])
        #expect(clean.status == 0)
        let after = try JSONDecoder.snake.decode(VerifyReport.self, from: Data(clean.stdout.utf8))
        #expect(after.orphanBlobs == 0 && after.tempFiles == 0 && after.rows == report.rows)
    }
}

extension JSONDecoder {
    static var snake: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
