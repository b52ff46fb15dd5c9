import Foundation
import Testing
@_spi(Benchmarks) @testable import ArtCacheCore
@_spi(Benchmarks) @testable import ArtCacheStore

/// Opening a cache sweeps what dead writers left in `tmp/` (their lock file,
/// their temp files), so a crash does not leave `verify` failing until
/// someone repairs; a live writer's files (its flock is held) are never touched.
@Suite("Store: dead writers' leftovers are swept at open", .serialized)
struct DeadWriterSweepTests {
    @Test func deadWritersFilesGoLiveWritersFilesStay() async throws {
        let dir = TempDir()
        let settings = Fixtures.settings(dir.path)
        // A live writer in this process, with a temp file in flight.
        let live = try await CacheStore.open(settings: settings)
        let inFlight = try live.blobs.writeTemporary(Data("in flight".utf8))
        // A dead writer: its lock file is there, nobody holds its flock; and
        // a temp file whose writer's lock is gone altogether.
        let tmp = dir.path + "/tmp/"
        let dead = String(format: "%016llx", UInt64.random(in: 0...UInt64.max))
        let orphaned = String(format: "%016llx", UInt64.random(in: 0...UInt64.max))
        let deadFiles = [tmp + dead + ".writer", tmp + dead + "-\(UUID().uuidString).part",
                         tmp + dead + "-\(UUID().uuidString).part", tmp + orphaned + "-\(UUID().uuidString).part"]
        for file in deadFiles { #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8))) }
        // Not artcache's names: never deleted.
        let foreign = tmp + "notes.txt"
        #expect(FileManager.default.createFile(atPath: foreign, contents: Data("keep".utf8)))

        let opened = try await CacheStore.open(settings: settings)
        for file in deadFiles { #expect(!FileManager.default.fileExists(atPath: file), "\(file) was left") }
        #expect(FileManager.default.fileExists(atPath: inFlight), "a live writer's temp file was removed")
        #expect(FileManager.default.fileExists(atPath: live.blobs.writer.path), "a live writer's lock was removed")
        #expect(FileManager.default.fileExists(atPath: foreign))
        let report = try await opened.verify()
        #expect(report.tempFiles == 0 && report.problemCount == 0, "\(report.problems)")
        try await live.close()
        try await opened.close()
    }

    /// The real thing: a writer process SIGKILLed with puts in flight.
    @Test(.timeLimit(.minutes(3))) func aSigkilledWritersLockAndTempFilesAreGoneAfterTheNextOpen() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        let (process, out, _) = try CLI.start(["--cache-dir", cache, "--count", "100000", "--progress", "--size", "200000",
                                               "--size", "300000", "--concurrency", "8", "--prefix", "http://crash.test/"],
                                              executable: CLI.stress)
        let reached = await CLI.waitForLines(out, count: 10)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(reached)
        #expect(process.terminationReason == .uncaughtSignal)
        let left = try FileManager.default.contentsOfDirectory(atPath: cache + "/tmp")
        #expect(left.contains { $0.hasSuffix(".writer") }, "the killed writer left no lock file: \(left)")

        let store = try await CacheStore.open(settings: Fixtures.settings(cache))
        let report = try await store.verify()
        #expect(report.tempFiles == 0, "\(report.problems)")
        let after = try FileManager.default.contentsOfDirectory(atPath: cache + "/tmp")
        #expect(after == [store.blobs.writer.token + WriterLock.suffix], "left in tmp/: \(after)")
        try await store.close()
    }
}
