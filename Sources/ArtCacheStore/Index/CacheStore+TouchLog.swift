@_spi(Benchmarks) import ArtCacheCore
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

extension CacheStore {
    /// Distinct keys folded per transaction (a flush's worth, as before the log).
    static let touchLogFoldChunk = 4096
    /// At most this many rows are folded by `close()` (in one transaction);
    /// a larger log is left for the next store's background fold.
    static let touchLogCloseFoldRows = 8192

    /// Rows in the touch log that start a background fold (`[cache] touch_log_fold_rows`).
    var touchLogFoldRows: Int { testSeams.withLock { $0.touchLogFoldRows } ?? settings.touchLogFoldRows }

    /// Starts folding the touch log (a job of the background scheduler)
    /// unless a fold is queued or runs.
    func startFold() {
        startJob(.touchLogFold, flag: \.folding) { [self] in
            await foldLogging()
            housekeeping.withLock { $0.folding = false }
        }
    }

    private func foldLogging() async {
        do {
            try await foldTouchLog()
        } catch is CancellationError {
            return  // closing: what is left waits for the next fold
        } catch {
            logger.warning("cannot fold access times into the index yet; the next flush retries",
                           metadata: ["error": "\(error)"])
        }
    }

    /// Folds the whole touch log into the index, a range of keys per
    /// transaction (``touchLogFoldChunk`` distinct keys): puts and lookups
    /// go between chunks. Rows appended meanwhile wait for the next fold.
    package func foldTouchLog() async throws {
        let chunk = testSeams.withLock { $0.touchLogFoldChunk } ?? Self.touchLogFoldChunk
        let bounds = try await Blocking.run { try self.db.read { try TouchLog.boundaries($0, chunk: chunk) } }
        var lower: String?
        for upper in bounds.map(Optional.some) + [nil] {
            try Task.checkCancellation()
            if housekeeping.withLock({ $0.closed }) { throw CancellationError() }
            let range = (lower, upper)
            _ = try await Blocking.run { try self.db.write { db in try TouchLog.fold(db, from: range.0, to: range.1) } }
            lower = upper
        }
    }

    /// At close: folds a small log (at most ``touchLogCloseFoldRows`` rows)
    /// in one transaction, so a short-lived process (a CLI command) leaves
    /// its rows up to date. Access times are approximate by contract: a
    /// failure is logged, never the command's.
    /// An empty log takes no write lock: a read-only command (`stats`,
    /// `get`) never waits for a writer at close.
    func foldSmallTouchLogBlocking() {
        do {
            let bound = try db.read { try TouchLog.rowBound($0) }
            guard (1...Self.touchLogCloseFoldRows).contains(bound) else { return }
            try db.write { db in
                guard try TouchLog.rowBound(db) <= Self.touchLogCloseFoldRows else { return }
                try TouchLog.fold(db)
            }
        } catch {
            logger.warning("access times left in the touch log at close", metadata: ["error": "\(error)"])
        }
    }
}
