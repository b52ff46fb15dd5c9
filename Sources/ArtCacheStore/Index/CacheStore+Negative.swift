@_spi(Benchmarks) import ArtCacheCore
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

extension CacheStore {
    /// Remembers that `url` failed for good until `now + ttl`; the URL leaves
    /// the retry queue in the same transaction (the origin answered).
    package func recordNegative(url: String, reason: String, message: String, status: Int?, ttl: TimeInterval,
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
            // Answers past their time are dropped as new ones come: the table
            // holds about what failed within one negative_ttl.
            try db.cachedStatement(sql: "DELETE FROM negative WHERE until <= ?").execute(arguments: [now.timeIntervalSince1970])
        }
    }

    /// The failure remembered for `key` and still in force at `now`, if any.
    package func negative(forKey key: CacheKey, now: Date = Date()) async throws -> NegativeAnswer? {
        try await Blocking.run {
            try self.db.unsafeRead { db in
                try Row.fetchOne(db.cachedStatement(sql: """
                    SELECT url, reason, message, status, failed_at, until FROM negative WHERE key = ? AND until > ?
                    """), arguments: [key.hex, now.timeIntervalSince1970]).map { row in
                    NegativeAnswer(url: row[0], reason: row[1], message: row[2], status: row[3],
                                   failedAt: Date(timeIntervalSince1970: row[4]), until: Date(timeIntervalSince1970: row[5]))
                }
            }
        }
    }

    /// Forgets every remembered failure (`purge --failures`); returns how many were in force.
    package func clearNegatives(now: Date = Date()) async throws -> Int {
        try await db.write { db in
            let live = try Int.fetchOne(db, sql: "SELECT count(*) FROM negative WHERE until > ?",
                                        arguments: [now.timeIntervalSince1970]) ?? 0
            try db.execute(sql: "DELETE FROM negative")
            return live
        }
    }

    /// Remembered failures in force at `now`.
    static func negativeCount(_ db: Database, now: Date) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM negative WHERE until > ?", arguments: [now.timeIntervalSince1970]) ?? 0
    }
}
