@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// Several processes on one cache directory, and crashes.
@Suite("Processes sharing a cache", .serialized, .timeLimit(.minutes(3)))
struct ProcessTests {
    @Test func twoProcessesWriteOneCache() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        // Inline and file blobs, several puts in flight per process (group commits).
        let a = try CLI.start(["--cache-dir", cache, "--count", "150", "--prefix", "http://a.test/", "--variants",
                               "--size", "4096", "--size", "100000", "--concurrency", "8"], executable: CLI.stress)
        let b = try CLI.start(["--cache-dir", cache, "--count", "150", "--prefix", "http://b.test/",
                               "--size", "70000", "--size", "2000", "--concurrency", "8"], executable: CLI.stress)
        // And a purge of another host running at the same time.
        let c = try CLI.start(["purge", "--cache-dir", cache, "--host", "nothing.test"])
        for (process, out, err) in [a, b, c] {
            let stderr = await CLI.exit(process, out, err).stderr
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

    /// SIGKILL writers again and again, three processes at a time, each with
    /// puts in flight (inline and file blobs, variants), at a different point
    /// each round: afterwards every row points at complete bytes of its
    /// recorded hash, the totals add up, and repair leaves nothing to fix.
    /// One writer of three stores behind (as a service miss does: its puts
    /// return before they commit), so kills also land with puts pending.
    @Test func sigkilledWritersLeaveAConsistentIndex() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        var generator = SystemRandomNumberGenerator()
        for round in 0..<6 {
            var writers: [(Child, Pipe, Int)] = []
            for lane in 0..<3 {
                let (process, out, _) = try CLI.start(["--cache-dir", cache, "--count", "100000", "--progress",
                                                       "--size", "20000", "--size", "90000", "--size", "3000",
                                                       "--concurrency", "4", "--prefix", "http://crash.test/\(round)/\(lane)/",
                                                       "--variants"] + (lane == 2 ? ["--behind"] : []), executable: CLI.stress)
                writers.append((process, out, Int.random(in: 2...30, using: &generator)))
            }
            for (process, out, after) in writers {
                // Kill it mid-flight once it has stored a random number of items.
                let reached = await CLI.waitForLines(out, count: after)
                kill(process.processIdentifier, SIGKILL)
                await CLI.waitForExit(process)
                #expect(reached)
                #expect(process.terminationReason == .uncaughtSignal)
            }
        }
        let result = try await CLI.run(["verify", "--cache-dir", cache, "--hash", "--json"])
        let report = try JSONDecoder.snake.decode(VerifyReport.self, from: Data(result.stdout.utf8))
        #expect(report.rows > 40)
        // The index itself never lies: no row without its complete bytes, totals exact.
        #expect(report.missingBlobs == 0)
        #expect(report.sizeMismatches == 0)
        #expect(report.hashMismatches == 0)
        #expect(report.totalsMismatch == 0)
        // Leftovers of killed writers (temp files, blobs renamed by an
        // uncommitted batch) are cleaned by repair.
        let repaired = try await CLI.run(["verify", "--cache-dir", cache, "--repair", "--json"])
        #expect(repaired.status == 0, "\(repaired.stderr)")
        let clean = try await CLI.run(["verify", "--cache-dir", cache, "--hash", "--json"])
        #expect(clean.status == 0)
        let after = try JSONDecoder.snake.decode(VerifyReport.self, from: Data(clean.stdout.utf8))
        #expect(after.problemCount == 0 && after.rows == report.rows)
        let stats = try await CLI.json(["stats", "--cache-dir", cache, "--json"])
        #expect((stats["inline_bytes"] as? Int ?? 0) > 0 && (stats["file_bytes"] as? Int ?? 0) > 0)
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
