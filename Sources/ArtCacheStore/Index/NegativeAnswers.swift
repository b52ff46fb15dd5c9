import ArtCacheCore
import Foundation
internal import GRDB

/// A final failure remembered for a URL (negative caching, `[download]
/// negative_ttl`): within its time a request fails at once with it, and the
/// origin is not asked again.
package struct NegativeAnswer: Sendable, Equatable {
    package var url: String
    /// The error's stable reason: `http_404`, `http_410`, `not_an_image`.
    package var reason: String
    package var message: String
    package var status: Int?
    package var failedAt: Date
    package var until: Date
}

/// What this process knows of the `negative` table without reading it.
struct NegativeHint: Sendable {
    /// A read found no row, at `readAt`, and this process recorded none since.
    var empty = false
    var readAt: ContinuousClock.Instant?
    var recordedAt: ContinuousClock.Instant?
    /// How long "the table is empty" is believed before it is read again:
    /// another process's answer is seen within this time.
    static let horizon: Duration = .seconds(1)
}

/// The `negative` table: final failures remembered per URL, and what this
/// process knows of the table without reading it. The store's (``CacheStore/negatives``).
package final class NegativeAnswers: Sendable {
    let db: DatabasePool
    /// Whether the table may hold answers in force, and when that was last
    /// read: a miss skips the lookup while the table is known empty.
    private let hint = Locked(NegativeHint())

    init(db: DatabasePool) { self.db = db }

    /// Remembers that `url` failed for good until `now + ttl`; the URL leaves
    /// the retry queue in the same transaction (the origin answered).
    package func record(url: String, reason: String, message: String, status: Int?, ttl: TimeInterval,
                                now: Date = Date()) async throws {
        let normalized = try NormalizedURL.forStore(url)
        try await db.write { db in
            try db.cachedStatement(sql: "DELETE FROM retry_queue WHERE url = ?").execute(arguments: [normalized.string])
            try db.cachedStatement(sql: """
                INSERT INTO negative (key, url, reason, message, status, failed_at, until) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET reason = excluded.reason, message = excluded.message,
                    status = excluded.status, failed_at = excluded.failed_at, until = excluded.until
                """).execute(arguments: [normalized.key.hex, normalized.string, reason, message, status,
                                         now.timeIntervalSince1970, now.addingTimeInterval(ttl).timeIntervalSince1970])
        }
        let recorded = ContinuousClock().now
        hint.withLock { hint in
            hint.empty = false
            hint.recordedAt = recorded
        }
    }

    /// Remembers a render of `url`'s original that failed for good, under
    /// the variant's `key` (per source and spec) until `now + ttl`: the
    /// original stays cached and in no queue.
    package func record(key: CacheKey, url: String, reason: String, message: String, ttl: TimeInterval,
                        now: Date = Date()) async throws {
        try await db.write { db in
            try db.cachedStatement(sql: """
                INSERT INTO negative (key, url, reason, message, status, failed_at, until) VALUES (?, ?, ?, ?, NULL, ?, ?)
                ON CONFLICT(key) DO UPDATE SET reason = excluded.reason, message = excluded.message,
                    status = NULL, failed_at = excluded.failed_at, until = excluded.until
                """).execute(arguments: [key.hex, url, reason, message, now.timeIntervalSince1970,
                                         now.addingTimeInterval(ttl).timeIntervalSince1970])
        }
        let recorded = ContinuousClock().now
        hint.withLock { hint in
            hint.empty = false
            hint.recordedAt = recorded
        }
    }

    /// The failure remembered for `key` and still in force at `now`, if any.
    /// A miss costs no read while the table is known to be empty (checked
    /// at most once per ``NegativeHint/horizon``; an answer this process
    /// records is seen at once, another process's within the horizon).
    package func answer(forKey key: CacheKey, now: Date = Date()) async throws -> NegativeAnswer? {
        let clock = ContinuousClock()
        let skip = hint.withLock { hint in
            hint.empty && hint.readAt.map { clock.now - $0 < NegativeHint.horizon } ?? false
        }
        if skip { return nil }
        return try await Blocking.run {
            let readAt = clock.now
            let (answer, any) = try self.db.unsafeRead { db -> (NegativeAnswer?, Bool) in
                let answer = try Row.fetchOne(db.cachedStatement(sql: """
                    SELECT url, reason, message, status, failed_at, until FROM negative WHERE key = ? AND until > ?
                    """), arguments: [key.hex, now.timeIntervalSince1970]).map { row in
                    NegativeAnswer(url: row[0], reason: row[1], message: row[2], status: row[3],
                                   failedAt: Date(timeIntervalSince1970: row[4]), until: Date(timeIntervalSince1970: row[5]))
                }
                if answer != nil { return (answer, true) }
                return (nil, try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM negative)")) ?? true)
            }
            self.hint.withLock { hint in
                if any {
                    hint.empty = false
                } else if hint.recordedAt.map({ $0 < readAt }) ?? true {  // no record raced this read
                    hint.empty = true
                    hint.readAt = readAt
                }
            }
            return answer
        }
    }

    /// Drops the answers past their time (indexed on `until`), then the
    /// oldest beyond `max` rows (`[download] negative_max`); returns how
    /// many went. Run as a `negative_cleanup` job of the background
    /// scheduler after answers are recorded, never on the request's path.
    package func clean(max: Int, now: Date = Date()) async throws -> Int {
        try await db.write { db in
            try db.cachedStatement(sql: "DELETE FROM negative WHERE until <= ?").execute(arguments: [now.timeIntervalSince1970])
            var removed = db.changesCount
            let count = try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM negative")) ?? 0
            if count > max {
                try db.cachedStatement(sql: "DELETE FROM negative WHERE key IN (SELECT key FROM negative ORDER BY until LIMIT ?)")
                    .execute(arguments: [count - max])
                removed += db.changesCount
            }
            return removed
        }
    }

    /// Rows in the negative table, in force or not (tests, stats).
    package func rowCount() async throws -> Int {
        try await db.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM negative") ?? 0 }
    }

    /// Forgets every remembered failure (`purge --failures`); returns how many were in force.
    package func clear(now: Date = Date()) async throws -> Int {
        try await db.write { db in
            let live = try Int.fetchOne(db, sql: "SELECT count(*) FROM negative WHERE until > ?",
                                        arguments: [now.timeIntervalSince1970]) ?? 0
            try db.execute(sql: "DELETE FROM negative")
            return live
        }
    }

    /// Remembered failures in force at `now`.
    static func count(_ db: Database, now: Date) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM negative WHERE until > ?", arguments: [now.timeIntervalSince1970]) ?? 0
    }
}
