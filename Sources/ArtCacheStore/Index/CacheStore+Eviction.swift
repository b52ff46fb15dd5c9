@_spi(Benchmarks) import ArtCacheCore
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
        let (totals, pending) = try db.read { db in (try Schema.totals(db), try Self.hasEvictedRows(db)) }
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
            var (horizon, walked) = try Self.raiseHorizon(db, entries: need.0, bytes: need.1, below: ageCut)
            // Rows the touch log shows used since move up out of the way,
            // and the walk is done again without them (a few rounds at most:
            // a rescued row is never moved twice).
            for _ in 0..<8 where walked.entries > 0 {
                guard try TouchLog.rescue(db, below: horizon) > 0 else { break }
                (horizon, walked) = try Self.raiseHorizon(db, entries: need.0, bytes: need.1, below: ageCut)
            }
            guard walked.entries > 0 else { return walked }
            var removed = walked
            let families = try Self.evictFamilies(db, from: previous, to: horizon)
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

    /// Evicts by moving the horizon: the least recently accessed live rows
    /// go until `entries` and `bytes` are freed (rows accessed at the same
    /// instant go together), and every row accessed before `ageCut`. One walk
    /// of the `entry_lru` index from the current horizon; no row is written
    /// here (the reclaimer deletes them later, in chunks). Returns the new
    /// horizon and what the rows it passed add up to.
    ///
    /// Variants accessed after the new horizon whose original falls below
    /// it go too: ``evictFamilies(_:from:to:)``.
    static func raiseHorizon(_ db: Database, entries: Int, bytes: Int64, below ageCut: Double) throws -> (Double, Totals) {
        let current = try horizon(db)
        var removed = Totals()
        var last = current
        guard entries > 0 || bytes > 0 || ageCut > current else { return (current, removed) }
        let rows = try Row.fetchCursor(db, sql: """
            SELECT accessed_at, kind, size, blob IS NULL FROM entry INDEXED BY entry_lru
            WHERE accessed_at >= ? ORDER BY accessed_at
            """, arguments: [current])
        while let row = try rows.next() {
            let at: Double = row[0]
            let enough = removed.entries >= entries && removed.bytes >= bytes
            if enough && at >= ageCut && at > last { break }
            removed.add(kind: EntryKind(rawValue: row[1]) ?? .original, size: row[2], inline: row[3])
            last = at
        }
        guard removed.entries > 0 else { return (current, removed) }
        return (last.nextUp, removed)
    }

    private static func horizon(_ db: Database) throws -> Double { try Schema.horizon(db) }

    /// An original takes its variants with it: live variants of the
    /// originals between the `previous` horizon and the new one are moved
    /// below it (their access time set to `previous`) and counted out. A
    /// variant is usually newer than its original (rendered after the
    /// download), so this is the common case, not an exception.
    static func evictFamilies(_ db: Database, from previous: Double, to horizon: Double) throws -> Totals {
        let orphaned = """
            parent_key IS NOT NULL AND accessed_at >= ? AND parent_key IN (
                SELECT key FROM entry INDEXED BY entry_lru WHERE accessed_at >= ? AND accessed_at < ? AND kind = 'original')
            """
        let arguments: StatementArguments = [horizon, previous, horizon]
        var removed = Totals()
        let rows = try Row.fetchCursor(db, sql: "SELECT kind, size, blob IS NULL FROM entry WHERE \(orphaned)", arguments: arguments)
        while let row = try rows.next() {
            removed.add(kind: EntryKind(rawValue: row[0]) ?? .variant, size: row[1], inline: row[2])
        }
        guard removed.entries > 0 else { return removed }
        try db.execute(sql: "UPDATE entry SET accessed_at = ? WHERE \(orphaned)", arguments: [previous] + arguments)
        return removed
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
                      WHERE key NOT IN (SELECT key FROM temp.victim) AND \(Schema.live())
                        \(variantsOnly ? "AND kind = 'variant'" : "")
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
