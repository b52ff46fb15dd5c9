import ArtCacheCore
import Foundation
internal import GRDB
import Logging

/// The content store: the SQLite index (GRDB, WAL) holding small blobs
/// inline, plus files for large ones, shared safely by several tasks and
/// several processes on one cache directory.
///
/// Open it once per process with ``open(settings:logger:)`` and call
/// ``close()`` before exiting: it lets the puts in flight finish, refuses
/// later ones, and writes batched access times. A store released without
/// `close()` loses those access times and counts (logged): its `deinit`
/// does no I/O, since it may run on any thread, Swift's cooperative pool included.
package final class CacheStore: Sendable {
    package let settings: CacheSettings
    package let directory: URL
    let db: DatabasePool
    /// Checkpoints the WAL behind the commits (nil: the writer does).
    let checkpointer: Checkpointer?
    let blobs: BlobStore
    let logger: Logger
    let pending = Locked(PendingAccess())
    let writes: WriteQueue
    /// Puts accepted and not yet committed (store-behind), read first.
    let behind: WriteBehind
    /// Admits puts until ``close()``, which waits for the admitted ones.
    let gate = WriteGate()
    let housekeeping = Locked(Housekeeping())
    /// Final failures remembered per URL (the `negative` table).
    package let negatives: NegativeAnswers
    /// URLs that failed for network reasons (the `retry_queue` table).
    package let retries: RetryQueue
    /// Which process downloads a URL now (the `download_lease` table).
    package let leases: DownloadLeases
    /// Test seams: points where tests hold an operation at a known step or
    /// shrink a batch (all unset in production; nothing else reads them).
    package let testSeams = Locked(TestSeams())
    /// Durations of the stages of this process's requests: the store records
    /// its commits (`store_commit`); the pipeline over it, the rest.
    package let stages = StageTimings()
    /// Runs the store's work behind answers (the touch-log fold, the
    /// reclaimer): the pipeline's scheduler, or one of the store's own when
    /// it is opened alone (then closed with it).
    package let background: BackgroundScheduler
    private let ownsBackground: Bool

    /// Verify, purge and stats (``StoreMaintenance``); the façade methods
    /// `verify`, `purge` and `stats` below call it.
    package var maintenance: StoreMaintenance { StoreMaintenance(store: self) }

    /// The store's test seams, in one place (``testSeams``).
    package struct TestSeams: Sendable {
        /// Runs on the reader's thread once ``verify(repair:hash:)`` has read
        /// every row of its snapshot and before it lists the blob files: a
        /// test that blocks here commits writes in the middle of the scan.
        package var verifyRowsScanned: (@Sendable () -> Void)?
        /// Runs on the reclaimer's thread before each chunk: a test that
        /// blocks here sees evicted rows that are not deleted yet.
        package var reclaimChunkStarting: (@Sendable () -> Void)?
        /// Rows per reclaimer chunk instead of ``CacheStore/reclaimChunk``.
        package var reclaimChunkRows: Int?
        /// Touch log rows that start a background fold instead of `[cache] touch_log_fold_rows`.
        package var touchLogFoldRows: Int?
        /// Distinct keys per fold transaction instead of ``CacheStore/touchLogFoldChunk``.
        package var touchLogFoldChunk: Int?
        package init() {}
    }

    /// Opens (creating if needed) the cache in `settings.directory`. The cost
    /// does not depend on how many items the cache holds: nothing is listed.
    package static func open(settings: CacheSettings, logger: Logger = Logger(label: "artcache.store")) async throws -> CacheStore {
        try await Blocking.run { try openBlocking(settings: settings, logger: logger) }
    }

    /// Opens the store with its background work run by `background` (the
    /// pipeline's scheduler, closed by the pipeline).
    package static func open(settings: CacheSettings, logger: Logger,
                             background: BackgroundScheduler?) async throws -> CacheStore {
        try await Blocking.run { try openBlocking(settings: settings, logger: logger, background: background) }
    }

    /// Synchronous open, for callers outside Swift concurrency.
    package static func openBlocking(settings: CacheSettings, logger: Logger = Logger(label: "artcache.store"),
                                     background: BackgroundScheduler? = nil) throws -> CacheStore {
        let store = try CacheStore(settings: settings, logger: logger, background: background)
        store.writes.attach(commit: { [weak store] puts in
            store?.commit(puts) ?? puts.map { _ in .failure(StoreError(.closed, "the cache is closed: nothing was written")) }
        }, afterBatch: { [weak store] puts in
            store?.enforceLimitsLogging()
            // A row and its index entries take about a page; inline bytes go through the WAL too.
            store?.checkpointer?.committed(puts.reduce(0) { $0 + 4096 + ($1.inlineData?.count ?? 0) })
        })
        store.startFlusher()
        return store
    }

    /// How much of the index file reads map (`PRAGMA mmap_size`).
    static let indexMapBytes = 2_147_418_112

    private init(settings: CacheSettings, logger: Logger, background: BackgroundScheduler?) throws {
        self.settings = settings
        self.logger = logger
        self.background = background ?? BackgroundScheduler()
        for kind in BackgroundKind.storeKinds { self.background.register(kind) }
        ownsBackground = background == nil
        directory = URL(fileURLWithPath: settings.directory, isDirectory: true).standardizedFileURL
        let mode = try Self.openingMode(settings, directory: directory)
        blobs = try BlobStore(root: directory, mode: mode)
        writes = WriteQueue(maxBatch: settings.writeBatchMax, niceness: Int32(settings.writerNice))
        behind = WriteBehind(capacity: settings.writeBehindMax)

        var config = GRDB.Configuration()
        config.busyMode = .timeout(60)  // other processes' writes wait, never surface as SQLITE_BUSY
        config.maximumReaderCount = 4
        config.label = "artcache.index"
        config.prepareDatabase { db in
            // NORMAL in WAL mode: a commit survives a crash of the process
            // (kill -9); after a power loss the newest commits may be missing,
            // never half there. File blobs are synced before their rows commit.
            try db.execute(sql: "PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY")
            // Debian builds SQLite with SECURE_DELETE on, so every delete
            // overwrote the freed bytes: evicting 10% of a 1M-row index with
            // inline blobs wrote them all again. FAST overwrites only where
            // it costs no extra I/O (an evicted cache entry is no secret).
            // Its page cache defaults to 2 MB per connection: 16 MB keeps
            // the B-tree's upper levels of a large index in memory (pages are
            // taken only as a database grows into them).
            try db.execute(sql: "PRAGMA secure_delete = FAST; PRAGMA cache_size = -16384")
            // Reads map the index instead of copying each page out of the
            // kernel's cache with a read() (SQLite writes as before; pages
            // newer in the WAL still come from it). At 1M rows (1.9 GB) a
            // lookup that misses the page cache above took a syscall per
            // B-tree level: index-bench's blocking p99 was 237-287 us
            // without, 74-226 us with (p50 unchanged; Benchmarks/RESULTS.md).
            // Mapped pages are the kernel's page cache, shared and
            // reclaimable: they count in a process's RSS as file pages
            // (RssFile), not its own memory.
            // SQLite clamps the size to its build's maximum (2 GB by default).
            try db.execute(sql: "PRAGMA mmap_size = \(Self.indexMapBytes)")
            // Takes effect only while the database is empty (a new cache); on
            // an existing one it would still need room to run (a full disk).
            if !db.configuration.readonly, try Int.fetchOne(db, sql: "PRAGMA page_count") == 0 {
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
            }
        }
        let lock = try DirectoryLock(path: directory.path + "/lock", mode: mode & 0o666)
        // SQLite gives the -wal and -shm files the mode of the database file:
        // made here first, with the cache's file mode.
        let index = Glibc.open(directory.path + "/index.sqlite", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode & 0o666)
        if settings.access == .create { FileMode.settle(index, mode & 0o666) }  // an existing cache's keeps its mode
        guard index >= 0 else { throw StoreError.io("cannot open \(directory.path)/index.sqlite", errno: errno) }
        Glibc.close(index)
        do {
            db = try Schema.openIndex(in: directory.path, configuration: config)
        } catch {
            // A full disk: the reserve makes room for the WAL and shared memory.
            guard error.code != .incompatibleSchema, blobs.releaseReserveIfFull() else { throw error }
            db = try Schema.openIndex(in: directory.path, configuration: config)
        }
        checkpointer = Checkpointer.start(for: db, path: directory.path + "/index.sqlite", logger: logger)
        negatives = NegativeAnswers(db: db)
        retries = RetryQueue(db: db)
        leases = DownloadLeases(db: db)
        // A killed writer's lock file, temp files and the blobs its last batch
        // renamed but never committed would fail `verify` until someone
        // repairs: gone now, unless their writer still lives.
        let pool = db
        let swept = blobs.sweepDeadWriters { path in
            guard let key = BlobStore.key(ofBlob: path) else { return true }  // not a blob path: never removed
            do {
                return try pool.read { try String.fetchOne($0, sql: "SELECT blob FROM entry WHERE key = ?", arguments: [key]) } == path
            } catch {
                return true  // unsure: keep it (verify --repair decides later)
            }
        }
        if swept > 0 { logger.info("removed what dead writers left", metadata: ["files": "\(swept)"]) }
        // Store v1's blob files move inline or to the one-level layout; in
        // chunks that each commit, so an interrupted migration resumes here.
        try LegacyBlobMigration(db: db, blobs: blobs, inlineMax: settings.inlineMax, logger: logger).run()
        blobs.ensureReserve()
        logger.debug("cache opened", metadata: ["directory": "\(directory.path)"])
        withExtendedLifetime(lock) {}
    }

    /// No I/O here: the last reference may go on any thread, Swift's
    /// cooperative pool included. Access times not written by ``close()``
    /// are lost (a store released without it), and logged.
    deinit {
        housekeeping.withLock { $0.flusher?.cancel() }
        let lost = pending.withLock { $0.take() }
        guard !lost.isEmpty else { return }
        logger.error("access times lost: the store was released without close()",
                     metadata: ["entries": "\(lost.touches.count)", "hits": "\(lost.hits)", "misses": "\(lost.misses)"])
    }

    /// Quiesces the store: puts already admitted commit (or fail) first,
    /// later ones fail with `closed` (``WriteGate``); then batched access
    /// times and counters are written (on a full disk they are lost, logged), background work stops and the writer
    /// lock is released. Closing twice is harmless.
    ///
    /// It finishes its work even when the calling task is cancelled (a
    /// service's closer is, once its shutdown grace is over): the final
    /// flush runs where cancellation cannot reach it (``finishing(_:)``).
    package func close() async throws {
        await gate.close()
        let (flusher, batchFlush) = housekeeping.withLock { state in
            state.closed = true
            defer { state.flusher = nil; state.batchFlush = nil }
            return (state.flusher, state.batchFlush)
        }
        flusher?.cancel()
        // This store's jobs are cancelled and awaited: a fold stops between
        // its chunks (each one commits whole); the reclaimer after its
        // chunk (evicted rows left are counted out and invisible, and the
        // next store on this cache deletes them).
        if ownsBackground {
            await background.close()
        } else {
            let mine = jobScope
            await background.cancel { $0.key == mine && ($0.kind == .touchLogFold || $0.kind == .reclaim) }
        }
        // A background flush cut short puts its batch back: wait for both to
        // end, then write whatever is pending.
        await flusher?.value
        await batchFlush?.value
        defer {
            // No put is admitted any more and none is in flight (even if the
            // flush failed): no temp file can be written under this token
            // once it is released.
            blobs.renames.close()
            blobs.writer.release()
        }
        do {
            try await finishing {
                defer { self.checkpointer?.close() }
                try self.flushBlocking()
                self.foldSmallTouchLogBlocking()
            }
        } catch let error as StoreError where error.code == .storageFull {
            // Access times and counters are approximate by contract: on a full
            // disk they are lost (logged), and the command's own result stands.
            logger.warning("access times not recorded at close: the cache's disk is full", metadata: ["error": "\(error)"])
        }
    }

    /// Runs `body` on the blocking pool to its end, whether or not the
    /// calling task is cancelled: GRDB's async `write` and the pool's queue
    /// both give up on a cancelled task; a detached task is never cancelled,
    /// and awaiting its value does not pass the caller's cancellation on.
    private func finishing<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        // close()'s own last flush, awaited here: issue 34 keeps this one task.
        try await Task.detached { try await Blocking.run(body) }.value  // not background work
    }

    // MARK: Reading

    /// The index row for `url`, without counting a hit or touching it.
    package func entry(forURL url: String) async throws -> CacheEntry? {
        let key = try NormalizedURL.forStore(url).key
        return try await entry(forKey: key)
    }

    /// One trivial read through the pool: the index is open (not closed) and answers.
    package func ping() async throws {
        if gate.isClosed { throw StoreError(.closed, "the cache is closed") }
        _ = try await db.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM totals") }
    }

    /// The row of `key`: a put still pending behind first, else the index's.
    package func entry(forKey key: CacheKey) async throws -> CacheEntry? {
        if let pending = behind.find(key.hex) { return pending.entry }
        return try await committedEntry(forKey: key)
    }

    /// The index's row of `key` (what is committed).
    func committedEntry(forKey key: CacheKey) async throws -> CacheEntry? {
        try await db.read { db in
            try CacheEntry.fetchLive(db, key: key.hex)
        }
    }

    /// Looks `url` up: counts a hit or a miss, and marks the item used (batched).
    package func lookup(url: String) async throws -> CachedImage? {
        try await lookup(key: NormalizedURL.forStore(url).key)
    }

    /// `counting`: count the lookup in the `hits` / `misses` counters (a
    /// found item is touched either way). The pipeline counts once per
    /// request instead, whatever lookups the request takes.
    package func lookup(key: CacheKey, counting: Bool = true) async throws -> CachedImage? {
        if let pending = behind.find(key.hex) { return recordLookup(pending.entry, pending.data, counting: counting) }
        // One hop: the row, its inline bytes or its file, read on one thread
        // of the blocking pool (GRDB's async read took a hop to its reader's
        // queue and back, and a file blob another one).
        return try await Blocking.run { try self.lookupCommitted(key: key, counting: counting) }
    }

    /// ``lookup(key:)`` for a thread of the caller's own (a render thread, a
    /// server's worker pool; never Swift's cooperative pool): no hop to
    /// another thread, so the cost is SQLite's and the file read's alone.
    package func lookupBlocking(key: CacheKey) throws -> CachedImage? {
        if let pending = behind.find(key.hex) { return recordLookup(pending.entry, pending.data) }
        return try lookupCommitted(key: key, counting: true)
    }

    /// The committed row of `key` and its bytes, read on the calling thread.
    private func lookupCommitted(key: CacheKey, counting: Bool) throws -> CachedImage? {
        // An inline blob comes with its row, from one statement: its own read
        // snapshot, so no BEGIN / COMMIT around it (GRDB's `read` adds them).
        let found = try db.unsafeRead { db in try Self.readRow(db, key: key) }
        var data = found?.inline
        if let blob = found?.entry.blob { data = try blobs.read(blob) }
        return recordLookup(found?.entry, data, counting: counting)
    }

    /// Built once: the statement cache is keyed by the SQL text, so a
    /// string interpolated per lookup was rebuilt and hashed every time.
    private static let readRowSQL = """
        SELECT \(CacheEntry.columns(of: "entry")), inline_blob.data FROM entry LEFT JOIN inline_blob USING (key)
        WHERE entry.key = ? AND \(Schema.live())
        """

    private static func readRow(_ db: Database, key: CacheKey) throws -> (entry: CacheEntry, inline: Data?)? {
        try Row.fetchOne(db.cachedStatement(sql: readRowSQL), arguments: [key.hex])
            .map { (CacheEntry(row: $0), $0[CacheEntry.columnNames.count]) }
    }

    /// Batches the touch of a found item and, when `counting`, counts the
    /// hit or the miss.
    private func recordLookup(_ entry: CacheEntry?, _ data: Data?, counting: Bool = true) -> CachedImage? {
        guard let entry, let data, Int64(data.count) == entry.size else {
            // Evicted by another process between the index read and the open
            // (or a blob cut by a power loss: `verify --repair` drops its row).
            if counting { recordMiss() }
            return nil
        }
        recordHit(entry, counting: counting)
        return CachedImage(entry: entry, data: data)
    }

    /// Every variant row of an original.
    package func variants(of key: CacheKey) async throws -> [CacheEntry] {
        try await db.read { db in
            try Row.fetchAll(db, sql: "SELECT \(CacheEntry.columns) FROM entry WHERE parent_key = ? AND \(Schema.live()) ORDER BY spec", arguments: [key.hex])
                .map(CacheEntry.init(row:))
        }
    }
}

/// The store as one façade: what operators run, implemented by ``StoreMaintenance``.
extension CacheStore {
    package func verify(repair: Bool = false, hash: Bool = false) async throws -> VerifyReport {
        try await maintenance.verify(repair: repair, hash: hash)
    }

    package func purge(_ request: PurgeRequest, now: Date = Date()) async throws -> PurgeReport {
        try await maintenance.purge(request, now: now)
    }

    package func stats(now: Date = Date()) async throws -> CacheStats { try await maintenance.stats(now: now) }
}
