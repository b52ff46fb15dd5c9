import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheStore

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

    /// A writer killed between renaming its batch's blobs into `objects/` and
    /// committing their rows left files no row names (`verify`: orphans,
    /// until `--repair`). Its rename journal lists them: the next open
    /// removes exactly those, and keeps a listed blob a row does name (the
    /// batch had committed) and anything that is not a blob path.
    @Test func aDeadWritersUncommittedBlobsGoItsCommittedOnesStay() async throws {
        let dir = TempDir()
        var settings = Fixtures.settings(dir.path)
        settings.inlineMax = 0  // every blob a file
        let writer = try await CacheStore.open(settings: settings)
        let committed = try await writer.put(url: "https://h/a.png", data: Fixtures.pngLike(size: 5000)).entry
        let committedBlob = try #require(committed.blob)
        // What the killed writer had renamed without committing.
        let orphanKey = try NormalizedURL("https://h/never-committed.png").key.hex
        let orphan = "objects/\(orphanKey.prefix(2))/\(orphanKey)-abc123"
        #expect(FileManager.default.createFile(atPath: dir.path + "/" + orphan, contents: Fixtures.pngLike(size: 4000)))
        let dead = String(format: "%016llx", UInt64.random(in: 0...UInt64.max))
        let tmp = dir.path + "/tmp/"
        #expect(FileManager.default.createFile(atPath: tmp + dead + ".writer", contents: Data()))
        let journal = [orphan, committedBlob, "../../etc/passwd", "objects/zz/nope"].joined(separator: "\n") + "\n"
        #expect(FileManager.default.createFile(atPath: tmp + dead + RenameJournal.suffix, contents: Data(journal.utf8)))
        #expect(try await writer.verify().orphanBlobs == 1, "before: the uncommitted blob is an orphan")

        let opened = try await CacheStore.open(settings: settings)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/" + orphan))
        #expect(FileManager.default.fileExists(atPath: dir.path + "/" + committedBlob))
        #expect(!FileManager.default.fileExists(atPath: tmp + dead + RenameJournal.suffix))
        let report = try await opened.verify()
        #expect(report.problemCount == 0, "\(report.problems)")
        #expect(try await opened.lookup(key: committed.cacheKey)?.data.count == 5000)
        try await writer.close()
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
        await CLI.waitForExit(process)
        #expect(reached)
        #expect(process.terminationReason == .uncaughtSignal)
        let left = try FileManager.default.contentsOfDirectory(atPath: cache + "/tmp")
        #expect(left.contains { $0.hasSuffix(".writer") }, "the killed writer left no lock file: \(left)")

        let store = try await CacheStore.open(settings: Fixtures.settings(cache))
        let report = try await store.verify()
        #expect(report.tempFiles == 0, "\(report.problems)")
        // And what its last batch renamed into objects/ without committing.
        #expect(report.problemCount == 0, "\(report.problems)")
        let after = try FileManager.default.contentsOfDirectory(atPath: cache + "/tmp")
        #expect(after == [store.blobs.writer.token + WriterLock.suffix], "left in tmp/: \(after)")
        try await store.close()
    }
}
