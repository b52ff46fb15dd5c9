@_spi(Benchmarks) import ArtCacheCore
import Foundation
internal import GRDB

extension CacheStore {
    /// Checks the limits (O(1): the totals row) and evicts when they are
    /// exceeded: least recently accessed first, down to the low-water mark;
    /// items not accessed within `maxAge` go too (checked at most once a
    /// minute per process). Evicting an original takes its variants with it.
    /// Runs after every group commit; callable directly.
    @_spi(Benchmarks) public func enforceLimits(now: Date = Date()) async throws {
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
        let totals = try db.read { try Schema.totals($0) }
        let overSize = totals.bytes > settings.maxBytes || totals.entries > settings.maxEntries
        let ageDue = settings.maxAge > 0 && housekeeping.withLock { state in
            guard now.timeIntervalSince(state.lastAgeSweep) >= 60 else { return false }
            state.lastAgeSweep = now
            return true
        }
        guard overSize || ageDue else { return }
        try flushBlocking()  // recent reads must count before choosing victims
        let settings = self.settings
        let (garbage, removed) = try writeMakingRoomBlocking { db -> ([String], Totals) in
            try Self.clearVictims(db)
            if ageDue {
                try db.execute(sql: "INSERT OR IGNORE INTO temp.victim (key) SELECT key FROM entry WHERE accessed_at < ?",
                               arguments: [now.timeIntervalSince1970 - settings.maxAge])
            }
            let remaining = try Schema.totals(db) - Self.victimTotals(db)
            if remaining.bytes > settings.maxBytes || remaining.entries > settings.maxEntries {
                try Self.chooseLeastRecentlyUsed(
                    db, bytes: remaining.bytes - Int64(Double(settings.maxBytes) * settings.lowWater),
                    entries: remaining.entries - Int(Double(settings.maxEntries) * settings.lowWater))
            }
            let (garbage, removed) = try Self.deleteVictims(db)
            try Schema.bump(db, "evictions", by: Int64(removed.entries))
            try Schema.bump(db, "evicted_bytes", by: removed.bytes)
            return (garbage, removed)
        }
        guard removed.entries > 0 else { return }
        logger.debug("evicted", metadata: ["entries": "\(removed.entries)", "bytes": "\(removed.bytes)", "files": "\(garbage.count)"])
        blobs.remove(garbage)
        try reclaimSpace()
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

    /// One statement picks the least recently accessed items (not already
    /// chosen) whose removal frees at least `bytes` and `entries`: a running
    /// sum over the `accessed_at` order, read from the covering `entry_lru`
    /// index. The walk is bounded by an estimate from the average item size
    /// and widened (doubled) only when that was not enough.
    static func chooseLeastRecentlyUsed(_ db: Database, bytes: Int64, entries: Int, variantsOnly: Bool = false) throws {
        guard bytes > 0 || entries > 0 else { return }
        let totals = try Schema.totals(db)
        let average = max(1, totals.bytes / Int64(max(1, totals.entries)))
        var limit = max(entries, Int(bytes / average)) * 5 / 4 + 1000
        while true {
            let window = """
                SELECT key, size, sum(size) OVER lru AS running_bytes, row_number() OVER lru AS running_entries
                FROM (SELECT key, size, accessed_at FROM entry
                      WHERE key NOT IN (SELECT key FROM temp.victim) \(variantsOnly ? "AND kind = 'variant'" : "")
                      ORDER BY accessed_at, key LIMIT ?)
                WINDOW lru AS (ORDER BY accessed_at, key ROWS UNBOUNDED PRECEDING)
                """
            // Enough within the bound (or the bound took every row): take the prefix.
            let reach = try Row.fetchOne(db, sql: "SELECT max(running_bytes) AS b, max(running_entries) AS n FROM (\(window))",
                                         arguments: [limit])
            let (reachBytes, reachEntries) = (reach?["b"] as Int64? ?? 0, reach?["n"] as Int? ?? 0)
            if (reachBytes >= bytes && reachEntries >= entries) || reachEntries < limit {
                try db.execute(sql: """
                    INSERT OR IGNORE INTO temp.victim (key)
                    SELECT key FROM (\(window)) WHERE running_bytes - size < ? OR running_entries - 1 < ?
                    """, arguments: [limit, bytes, entries])
                return
            }
            limit *= 2
        }
    }
}
