import ArtCacheCore
import Foundation
internal import GRDB

/// Statements on the `entry` table that span many rows: choosing victims,
/// moving the eviction horizon, deleting rows with their variants. Set-based
/// deletion is shared by writes (stale variants), eviction, purge and
/// verify: victims are collected in the writer connection's `temp.victim`
/// table, an original takes its variants with it, inline bytes go in the
/// same transaction and totals are adjusted once.
enum EntryRows {
    static func clearVictims(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TEMP TABLE IF NOT EXISTS victim (key TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
            DELETE FROM temp.victim;
            """)
    }

    /// Adds `keys` to the victims.
    static func addVictims(_ db: Database, keys: some Sequence<String>) throws {
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.victim (key) VALUES (?)")
        for key in keys { try insert.execute(arguments: [key]) }
    }

    /// Adds the variants of the chosen originals: they go with them.
    static func addFamilies(_ db: Database) throws {
        try db.execute(sql: """
            INSERT OR IGNORE INTO temp.victim (key)
            SELECT entry.key FROM temp.victim JOIN entry ON entry.parent_key = victim.key
            """)
    }

    /// What the live victims (and their variants) add up to: evicted rows
    /// among them are already counted out.
    static func victimTotals(_ db: Database) throws -> Totals {
        try addFamilies(db)
        let row = try Row.fetchOne(db, sql: """
            SELECT count(*) AS n, coalesce(sum(kind = 'original'), 0) AS o, coalesce(sum(size), 0) AS b,
                coalesce(sum(CASE WHEN blob IS NULL THEN size ELSE 0 END), 0) AS i
            FROM entry WHERE key IN (SELECT key FROM temp.victim) AND \(Schema.live())
            """)
        return Totals(entries: row?["n"] ?? 0, originals: row?["o"] ?? 0, bytes: row?["b"] ?? 0, inlineBytes: row?["i"] ?? 0)
    }

    /// Deletes the victims and their variants: inline bytes in the same
    /// transaction, totals adjusted once (for the live rows: evicted ones are
    /// counted out already). Returns the blob files to unlink after commit,
    /// what was removed of the live rows, and how many rows went in all.
    @discardableResult
    static func deleteVictims(_ db: Database) throws -> (files: [String], removed: Totals, rows: Int) {
        try addFamilies(db)
        // One pass over the victims' rows gives both what they add up to and their files.
        var removed = Totals()
        var rowCount = 0
        var files: [String] = []
        let rows = try Row.fetchCursor(db, sql: """
            SELECT entry.kind, entry.size, entry.blob, \(Schema.live()) FROM temp.victim JOIN entry USING (key)
            """)
        while let row = try rows.next() {
            let blob: String? = row[2]
            rowCount += 1
            if row[3] as Bool { removed.add(kind: EntryKind(rawValue: row[0]) ?? .original, size: row[1], inline: blob == nil) }
            if let blob { files.append(blob) }
        }
        guard rowCount > 0 else { return ([], removed, 0) }
        try db.execute(sql: """
            DELETE FROM inline_blob WHERE key IN (SELECT key FROM temp.victim);
            DELETE FROM entry WHERE key IN (SELECT key FROM temp.victim);
            DELETE FROM temp.victim;
            """)
        try (Totals() - removed).apply(db)
        return (files, removed, rowCount)
    }

    /// Deletes `keys` and their variants; returns the blob files to unlink after commit.
    static func deleteEntries(_ db: Database, keys: [String]) throws -> [String] {
        guard !keys.isEmpty else { return [] }
        try clearVictims(db)
        try addVictims(db, keys: keys)
        return try deleteVictims(db).files
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

    /// Whether evicted rows wait for the reclaimer (one probe of `entry_lru`).
    static func hasEvictedRows(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: """
            SELECT EXISTS (SELECT 1 FROM entry INDEXED BY entry_lru
                           WHERE accessed_at < (SELECT horizon FROM totals WHERE id = 1))
            """)) ?? false
    }
}
