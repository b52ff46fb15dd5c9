import Foundation
import GRDB
import Logging
import Testing
@testable import ArtCacheCore
@testable import ArtCacheStore
#if canImport(Glibc)
import Glibc
#endif

/// A failing access-time flush (a full disk) backs off instead of being
/// retried on every batch of hits, and the pending batch stays bounded.
@Suite("Store: access-time flush backoff")
struct AccessFlushBackoffTests {
    @Test(.enabled(if: Tmpfs.canMount, "needs root: mount -t tmpfs"), .timeLimit(.minutes(5)))
    func aFlushFailingOnAFullDiskIsNotRetriedOnEveryBatch() async throws {
        let dir = TempDir()
        let disk = try Tmpfs(at: dir.file("disk"), size: "3m")
        defer { disk.unmount() }
        let log = LogCounter()
        var settings = Fixtures.settings(disk.path + "/cache")
        settings.accessFlushBatch = 4
        let store = try await CacheStore.open(settings: settings, logger: log.logger)
        for index in 0..<8 {
            try await store.put(url: "https://h/\(index).png", data: Fixtures.pngLike(size: 300, seed: UInt8(index)))
        }
        // An empty WAL, then a full disk: the next write needs room SQLite cannot get (SQLITE_FULL).
        try await store.db.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        let filler = try disk.fill()

        // 40 batches' worth of hits; each hit waits for the flush it may have started.
        let started = Date()
        var lookups = 0
        for round in 0..<40 {
            for index in 0..<4 {
                #expect(try await store.lookup(url: "https://h/\((round + index) % 8).png") != nil)
                lookups += 1
                await store.housekeeping.withLock { $0.batchFlush }?.value
            }
        }
        let elapsed = Date().timeIntervalSince(started)
        let attempts = log.count("cannot record access times")
        #expect(attempts >= 1, "the flush never ran")
        // Backing off from 1 s, doubling: attempt k comes at least 2^(k-1) - 1 s
        // after the first, so a few attempts at most (however slow a loaded
        // machine runs this), never one per batch.
        let allowed = Int(log2(elapsed + 1)) + 1
        #expect(attempts <= allowed && attempts < 40,
                "\(attempts) flush attempts in \(elapsed) s for 40 batches of hits on a full disk (backoff allows \(allowed))")

        // Room again: an explicit flush writes everything kept meanwhile.
        try FileManager.default.removeItem(atPath: filler)
        try await store.flush()
        #expect(try await store.stats().hits == Int64(lookups))
        try await store.close()
    }
}

extension AccessFlushBackoffTests {
    /// While flushes fail the batch is kept, within its bound: the newest
    /// touches survive, the dropped ones are counted.
    @Test func thePendingBatchKeepsTheNewestTouchesWithinItsCapacity() {
        var pending = PendingAccess()
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        for index in 0..<10_000 {
            pending.touch("k\(index)", at: start + Double(index), hit: index.isMultiple(of: 2), capacity: 4096)
            #expect(pending.touches.count <= 4096)
        }
        #expect(pending.dropped == 10_000 - pending.touches.count)
        #expect(pending.touches["k9999"] != nil && pending.touches["k0"] == nil)
        let oldestKept = pending.touches.values.min() ?? start
        #expect(oldestKept > start + Double(10_000 - 4097), "an older touch was kept over a newer one")
        #expect(Set(pending.hitCounts.keys).isSubset(of: Set(pending.touches.keys)))
        // A failed flush's batch merged back stays within the bound too.
        var failed = PendingAccess()
        failed.merge(pending, capacity: 4096)
        failed.merge(pending.take(), capacity: 2048)
        #expect(failed.touches.count <= 2048 && failed.dropped > 0)
    }

    @Test func backoffDoublesFromOneSecondToAMinuteAndEndsOnSuccess() {
        var backoff = FlushBackoff()
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(backoff.allows(now))
        var delays: [TimeInterval] = []
        for _ in 0..<9 {
            backoff.failed(at: now)
            delays.append(backoff.delay)
        }
        #expect(delays == [1, 2, 4, 8, 16, 32, 60, 60, 60])
        #expect(!backoff.allows(now + 59) && backoff.allows(now + 60))
        backoff.succeeded()
        #expect(backoff.allows(now) && backoff.delay == 0)
    }
}

/// Log lines a component wrote (tests observing background work through its logs).
final class LogCounter: Sendable {
    private let lines = Locked<[(message: String, metadata: Logger.Metadata)]>([])

    var logger: Logger {
        var logger = Logger(label: "artcache.test") { _ in Handler(counter: self) }
        logger.logLevel = .trace
        return logger
    }

    func count(_ text: String) -> Int { lines.withLock { $0.filter { $0.message.contains(text) }.count } }

    /// The values of metadata `key` of the lines `message` was logged with, in order.
    func values(_ key: String, of message: String) -> [String] {
        lines.withLock { $0.filter { $0.message == message }.compactMap { $0.metadata[key].map { "\($0)" } } }
    }

    struct Handler: LogHandler {
        let counter: LogCounter
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            counter.lines.withLock { $0.append(("\(event.message)", all)) }
        }
    }
}

/// A small tmpfs mounted for one test (a disk that fills up for real). Root only.
struct Tmpfs {
    let path: String

    /// True when this process may mount one (root with the capability to).
    static let canMount: Bool = {
        guard getuid() == 0 else { return false }
        guard let probe = try? Tmpfs(at: FileManager.default.temporaryDirectory.path + "/artcache-tmpfs-probe-\(getpid())",
                                     size: "64k") else { return false }
        probe.unmount()
        rmdir(probe.path)
        return true
    }()

    init(at path: String, size: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard mount("tmpfs", path, "tmpfs", 0, "size=\(size),mode=0700") == 0 else {
            throw StoreError.io("cannot mount a tmpfs on \(path)", errno: errno)
        }
        self.path = path
    }

    /// Fills the file system until the kernel refuses more (ENOSPC); returns the filler's path.
    func fill() throws -> String {
        let filler = path + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.io("cannot create \(filler)", errno: errno) }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0xA5, count: 4096)
        var written = 0
        while written < 1 << 30 {  // bounded: a test disk holds a few MiB
            let count = write(fd, chunk, chunk.count)
            if count > 0 { written += count; continue }
            guard count < 0, errno == ENOSPC else { throw StoreError.io("cannot fill \(path)", errno: errno) }
            break
        }
        return filler
    }

    /// Detaches the mount (lazily: a file still open in it does not stop it).
    func unmount() { umount2(path, Int32(MNT_DETACH)) }
}
