@_spi(Benchmarks) import ArtCacheCore
import Foundation
internal import GRDB

/// Set-based deletion, shared by writes (stale variants), eviction, purge
/// and verify: victims are collected in the writer connection's
/// `temp.victim` table, an original takes its variants with it, inline
/// bytes go in the same transaction and totals are adjusted once.
extension CacheStore {
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
}
