import Foundation
internal import GRDB
import Logging

/// The content store: blobs on disk plus the SQLite index (GRDB, WAL), shared
/// safely by several tasks and several processes on one cache directory.
///
/// Open it once per process with ``open(settings:logger:)`` and call
/// ``close()`` before exiting so batched access times are written.
public final class CacheStore: Sendable {
    public let settings: CacheSettings
    public let directory: URL
    let db: DatabasePool
    let blobs: BlobStore
    let logger: Logger
    let pending = Locked(PendingAccess())
    let housekeeping = Locked(Housekeeping())

    struct Housekeeping {
        var lastAgeSweep: Date = .distantPast
        var flusher: Task<Void, Never>?
        /// A flush started because the batch grew large, if one runs.
        var batchFlush: Task<Void, Never>?
        var closed = false
    }

    /// Opens (creating if needed) the cache in `settings.directory`. The cost
    /// does not depend on how many items the cache holds: nothing is listed.
    public static func open(settings: CacheSettings, logger: Logger = Logger(label: "artcache.store")) async throws -> CacheStore {
        let store = try await Blocking.run { try CacheStore(settings: settings, logger: logger) }
        store.startFlusher()
        return store
    }

    /// Synchronous open, for callers outside Swift concurrency.
    public static func openBlocking(settings: CacheSettings, logger: Logger = Logger(label: "artcache.store")) throws -> CacheStore {
        let store = try CacheStore(settings: settings, logger: logger)
        store.startFlusher()
        return store
    }

    private init(settings: CacheSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        directory = URL(fileURLWithPath: settings.directory, isDirectory: true).standardizedFileURL
        blobs = BlobStore(root: directory)
        try blobs.createDirectories()

        var config = GRDB.Configuration()
        config.busyMode = .timeout(60)  // other processes' writes wait, never surface as SQLITE_BUSY
        config.maximumReaderCount = 4
        config.label = "artcache.index"
        let lock = try DirectoryLock(path: directory.path + "/lock")
        do {
            db = try DatabasePool(path: directory.path + "/index.sqlite", configuration: config)
            let migrator = Schema.migrator
            if try db.read({ try migrator.hasBeenSuperseded($0) }) {
                throw StoreError(.incompatibleSchema, "\(directory.path) was written by a newer artcache (unknown schema version)")
            }
            try migrator.migrate(db)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.database, "cannot open index in \(directory.path): \(error)")
        }
        withExtendedLifetime(lock) {}
    }

    deinit {
        housekeeping.withLock { $0.flusher?.cancel() }
        // Last chance for batched access times (a normal exit calls close()).
        let batch = pending.withLock { $0.take() }
        guard !batch.isEmpty else { return }
        do {
            try db.write { try Self.apply(batch, db: $0) }
        } catch {
            logger.error("access times lost at deinit", metadata: ["entries": "\(batch.touches.count)", "error": "\(error)"])
        }
    }

    /// Writes batched access times and counters, and stops background work.
    public func close() async throws {
        let (flusher, batchFlush) = housekeeping.withLock { state in
            state.closed = true
            defer { state.flusher = nil; state.batchFlush = nil }
            return (state.flusher, state.batchFlush)
        }
        flusher?.cancel()
        // A background flush cut short puts its batch back: wait for both to
        // end, then write whatever is pending.
        await flusher?.value
        await batchFlush?.value
        try await flush()
    }

    // MARK: Reading

    /// The index row for `url`, without counting a hit or touching it.
    public func entry(forURL url: String) async throws -> CacheEntry? {
        let key = try NormalizedURL.forStore(url).key
        return try await entry(forKey: key)
    }

    public func entry(forKey key: CacheKey) async throws -> CacheEntry? {
        try await db.read { db in
            try CacheEntry.fetchOne(db, key: key.hex)
        }
    }

    /// Looks `url` up: counts a hit or a miss, and marks the item used (batched).
    public func lookup(url: String) async throws -> CachedImage? {
        try await lookup(key: NormalizedURL.forStore(url).key)
    }

    public func lookup(key: CacheKey) async throws -> CachedImage? {
        guard let entry = try await entry(forKey: key) else {
            recordMiss()
            return nil
        }
        let blobs = self.blobs
        guard let data = try await Blocking.run({ try blobs.read(entry.blob) }), Int64(data.count) == entry.size else {
            // Evicted by another process between the index read and the open
            // (or a blob cut by a power loss: `verify --repair` drops its row).
            recordMiss()
            return nil
        }
        recordHit(entry)
        return CachedImage(entry: entry, data: data, path: blobs.absolutePath(entry.blob))
    }

    /// Absolute path of an entry's blob.
    public func path(of entry: CacheEntry) -> String { blobs.absolutePath(entry.blob) }

    /// Every variant row of an original.
    public func variants(of key: CacheKey) async throws -> [CacheEntry] {
        try await db.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM entry WHERE parent_key = ? ORDER BY spec", arguments: [key.hex])
                .map(CacheEntry.init(row:))
        }
    }
}
