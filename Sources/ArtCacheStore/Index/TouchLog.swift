import ArtCacheCore
import Foundation
internal import GRDB

/// The touch log: access times and hit counts are appended to `touch_log`
/// instead of being written into their rows.
///
/// Why: a touch written into its row rewrote that row's page and moved its
/// `entry_lru` entry, two random pages of the index each. At 1M rows a flush
/// of 4096 touches dirtied ~8000 pages (~33 MB), and the checkpoint's fsync
/// of them tripled the p99 of lookups running beside it. Appends fill the
/// log's last pages: ~90 pages per 4096 touches (Benchmarks/RESULTS.md, P5).
///
/// The rows learn their access times later, by key range, a chunk per
/// transaction (``fold(_:from:to:)``, in the background once the log holds
/// ``CacheStore/touchLogFoldRows`` rows, and at `close()` when it is small);
/// a key touched many times is written once. Eviction reads the log before
/// it moves the horizon: a row the log shows used since is rescued (moved
/// up to its logged time), never evicted for a stale access time
/// (``rescue(_:below:)``). Until a fold, a row's `accessed_at` and
/// `hit_count` lag behind the log (approximate by contract, like the batch
/// in memory before a flush).
enum TouchLog {
    /// Appends one row per touched key. Returns an upper bound of the rows
    /// the log holds (ids are appended in order; folds delete by key range).
    static func append(_ touches: [String: Date], hits: [String: Int], db: Database) throws -> Int {
        if !touches.isEmpty {
            let statement = try db.cachedStatement(sql: "INSERT INTO touch_log (key, at, hits) VALUES (?, ?, ?)")
            for (key, date) in touches {
                try statement.execute(arguments: [key, date.timeIntervalSince1970, hits[key] ?? 0])
            }
        }
        return try rowBound(db)
    }

    /// At least as many as the log's rows, O(log n).
    static func rowBound(_ db: Database) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT coalesce(max(id) - min(id) + 1, 0) FROM touch_log")) ?? 0
    }

    /// The latest access time the log holds (its last rows), if any.
    static func newest(_ db: Database) throws -> Double? {
        try Double.fetchOne(db, sql: "SELECT max(at) FROM (SELECT at FROM touch_log ORDER BY id DESC LIMIT 64)")
    }

    /// Folds the log's rows whose keys are in `lower..<upper` (nil: open)
    /// into their entries: the latest access time (never earlier than the
    /// row's own), hits added; then deletes them. In one transaction (the
    /// caller's), so a fold is never counted twice, whoever else folds.
    /// Live rows only: a touch never brings an evicted row back. Returns
    /// the keys folded.
    @discardableResult
    static func fold(_ db: Database, from lower: String? = nil, to upper: String? = nil) throws -> Int {
        let range = "(?1 IS NULL OR key >= ?1) AND (?2 IS NULL OR key < ?2)"
        let grouped = try Row.fetchAll(db, sql: """
            SELECT key, max(at) AS at, sum(hits) AS hits FROM touch_log WHERE \(range) GROUP BY key ORDER BY key
            """, arguments: [lower, upper])
        // In key order: the key index is walked once, front to back.
        let update = try db.cachedStatement(sql: """
            UPDATE entry SET accessed_at = max(accessed_at, ?), hit_count = hit_count + ? WHERE key = ? AND \(Schema.live())
            """)
        for row in grouped {
            try update.execute(arguments: [row["at"] as Double, row["hits"] as Int, row["key"] as String])
        }
        try db.execute(sql: "DELETE FROM touch_log WHERE \(range)", arguments: [lower, upper])
        return grouped.count
    }

    /// Keys that cut the log into ranges of about `chunk` distinct keys each.
    static func boundaries(_ db: Database, chunk: Int) throws -> [String] {
        try String.fetchAll(db, sql: """
            SELECT key FROM (SELECT key, row_number() OVER (ORDER BY key) AS n FROM (SELECT DISTINCT key FROM touch_log))
            WHERE n > 1 AND n % ? = 1 ORDER BY key
            """, arguments: [max(1, chunk)])
    }

    /// Live rows accessed before `horizon` that the log shows used later
    /// are moved up to their latest logged time (only these rows are
    /// written: the rest wait for a fold). Returns how many moved.
    static func rescue(_ db: Database, below horizon: Double) throws -> Int {
        try db.execute(sql: """
            UPDATE entry SET accessed_at = touched.at
            FROM (SELECT key, max(at) AS at FROM touch_log GROUP BY key) AS touched
            WHERE entry.key = touched.key AND entry.accessed_at < ? AND entry.accessed_at < touched.at
              AND \(Schema.live())
            """, arguments: [horizon])
        return db.changesCount
    }
}
