import ArtCacheCore
import Foundation
internal import GRDB

extension CacheStore {
    /// Checks the limits (O(1): the totals row) and evicts when they are
    /// exceeded: least recently accessed first, down to the low-water mark;
    /// items not accessed within `maxAge` go too (checked at most once a
    /// minute per process). Evicting an original takes its variants with it.
    /// Runs after every group commit; callable directly.
    ///
    /// Eviction raises the horizon (``raiseHorizon(_:entries:bytes:below:)``):
    /// when it returns, the evicted items are counted out and no read finds
    /// them; their rows, inline bytes and files are deleted right after, in
    /// the background, a chunk per transaction (``startReclaim()``), so puts
    /// never wait behind a large eviction.
    package func enforceLimits(now: Date = Date()) async throws {
        try await Blocking.run { try self.enforceLimitsBlocking(now: now) }
    }

    /// After a batch: an eviction that fails is logged (the next batch tries again).
    func enforceLimitsLogging() {
        do {
            try enforceLimitsBlocking()
        } catch {
            logger.warning("eviction failed; will retry after the next write", metadata: ["error": "\(error)"])
        }
    }

    func enforceLimitsBlocking(now: Date = Date()) throws {
        try blobs.cleanup.shared { try enforceLimitsHoldingCleanup(now: now) }
    }

    private func enforceLimitsHoldingCleanup(now: Date) throws {
        let (totals, pending) = try db.read { db in (try Schema.totals(db), try EntryRows.hasEvictedRows(db)) }
        if pending { startReclaim() }  // left by a process that stopped before it reclaimed them
        let overSize = totals.bytes > settings.maxBytes || totals.entries > settings.maxEntries
        let ageDue = settings.maxAge > 0 && housekeeping.withLock { state in
            guard now.timeIntervalSince(state.lastAgeSweep) >= 60 else { return false }
            state.lastAgeSweep = now
            return true
        }
        guard overSize || ageDue else { return }
        try flushBlocking()  // recent reads must count before choosing victims
        let settings = self.settings
        let removed = try writeMakingRoomBlocking { db -> Totals in
            let totals = try Schema.totals(db)
            let target = Totals(entries: Int(Double(settings.maxEntries) * settings.lowWater),
                                bytes: Int64(Double(settings.maxBytes) * settings.lowWater))
            let over = totals.bytes > settings.maxBytes || totals.entries > settings.maxEntries
            let need = over ? (entries: totals.entries - target.entries, bytes: totals.bytes - target.bytes) : (0, Int64(0))
            let ageCut = ageDue ? now.timeIntervalSince1970 - settings.maxAge : -Double.infinity
            let previous = try Schema.horizon(db)
            var (horizon, walked) = try EntryRows.raiseHorizon(db, entries: need.0, bytes: need.1, below: ageCut)
            // Rows the touch log shows used since move up out of the way,
            // and the walk is done again without them (a few rounds at most:
            // a rescued row is never moved twice).
            for _ in 0..<8 where walked.entries > 0 {
                guard try TouchLog.rescue(db, below: horizon) > 0 else { break }
                (horizon, walked) = try EntryRows.raiseHorizon(db, entries: need.0, bytes: need.1, below: ageCut)
            }
            guard walked.entries > 0 else { return walked }
            var removed = walked
            let families = try EntryRows.evictFamilies(db, from: previous, to: horizon)
            removed.add(families)
            try db.cachedStatement(sql: "UPDATE totals SET horizon = ? WHERE id = 1").execute(arguments: [horizon])
            try (Totals() - removed).apply(db)
            try Schema.bump(db, "evictions", by: Int64(removed.entries))
            try Schema.bump(db, "evicted_bytes", by: removed.bytes)
            return removed
        }
        guard removed.entries > 0 else { return }
        logger.debug("evicted", metadata: ["entries": "\(removed.entries)", "bytes": "\(removed.bytes)"])
        startReclaim()
    }

    /// Gives free pages of the database back to the file system when they
    /// add up (evicted inline blobs): `incremental_vacuum`, then a checkpoint
    /// so the file itself shrinks.
    ///
    /// Only when a quarter or more of the file is free (a purge, lower
    /// limits): the ~10% an eviction frees is refilled by the next writes,
    /// and moving pages for it would cost more than it gives back.
    func reclaimSpace(minimumFreePages: Int = 256) throws {
        let (free, total) = try db.read { db in
            (try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0, try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0)
        }
        guard free >= minimumFreePages, free * 4 >= total else { return }
        try db.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA incremental_vacuum")
            _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)")
        }
    }

    /// True when `error` says the disk is full (SQLITE_FULL, ENOSPC, EDQUOT).
    static func isDiskFull(_ error: any Error) -> Bool {
        if let error = error as? StoreError { return error.code == .storageFull }
        return (error as? DatabaseError)?.resultCode == .SQLITE_FULL
    }

    /// A write that must work on a full disk (purge, eviction): when SQLite
    /// finds no room, the space reserve is freed and the write runs once more.
    /// Errors come back typed (`storage_full`, `database`). Blocking: call it
    /// from the commit thread or the blocking pool.
    func writeMakingRoomBlocking<T>(_ work: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try db.write(work)
        } catch {
            guard Self.isDiskFull(error), blobs.releaseReserveIfFull() else { throw Self.storeError(error, writing: nil) }
            do {
                return try db.write(work)
            } catch {
                throw Self.storeError(error, writing: nil)
            }
        }
    }
}
