import ArtCacheCore
import Foundation
internal import GRDB

/// A URL whose download failed because of the network, kept until it succeeds.
public struct RetryItem: Sendable, Codable, Equatable {
    public var url: String
    public var reason: String
    public var message: String
    public var attempts: Int
    public var firstFailedAt: Date
    public var lastFailedAt: Date
}

/// The `retry_queue` table: URLs whose downloads failed because of the
/// network (the offline queue), until they succeed. The store's (``CacheStore/retries``).
package final class RetryQueue: Sendable {
    let db: DatabasePool

    init(db: DatabasePool) { self.db = db }

    /// Remembers a URL that failed for network reasons (the offline queue),
    /// keeping at most `limit` URLs: past it, the oldest failures are dropped
    /// and counted (`retry_dropped` in stats).
    package func add(url: String, reason: String, message: String, limit: Int = Int(Int32.max),
                             now: Date = Date()) async throws {
        try await db.write { db in
            try db.execute(sql: """
                INSERT INTO retry_queue (url, reason, message, attempts, first_failed_at, last_failed_at)
                VALUES (?, ?, ?, 1, ?, ?)
                ON CONFLICT(url) DO UPDATE SET reason = excluded.reason, message = excluded.message,
                    attempts = attempts + 1, last_failed_at = excluded.last_failed_at
                """, arguments: [url, reason, message, now.timeIntervalSince1970, now.timeIntervalSince1970])
            try db.execute(sql: """
                DELETE FROM retry_queue WHERE url IN (
                    SELECT url FROM retry_queue ORDER BY first_failed_at DESC, url DESC LIMIT -1 OFFSET ?)
                """, arguments: [max(1, limit)])
            try Schema.bump(db, "retry_dropped", by: Int64(db.changesCount))
        }
    }

    /// Forgets a URL (it succeeded, or the origin gave a final answer).
    package func remove(url: String) async throws {
        try await db.write { db in try db.execute(sql: "DELETE FROM retry_queue WHERE url = ?", arguments: [url]) }
    }

    /// The queued failures of `urls` only, by URL (a manifest asks for its
    /// result set's, not the whole queue). `url` is the table's primary
    /// key, so each chunk is a lookup per URL through its index.
    package func items(urls: [String]) async throws -> [String: RetryItem] {
        let unique = Array(Set(urls))
        guard !unique.isEmpty else { return [:] }
        return try await db.read { db in
            var found: [String: RetryItem] = [:]
            var start = 0
            while start < unique.count {
                let chunk = Array(unique[start..<min(unique.count, start + Self.lookupChunk)])
                start += chunk.count
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                for row in try Row.fetchAll(db, sql: "SELECT * FROM retry_queue WHERE url IN (\(marks))",
                                               arguments: StatementArguments(chunk)) {
                    let item = Self.item(row)
                    found[item.url] = item
                }
            }
            return found
        }
    }

    /// URLs looked up per statement (under SQLite's bound-variable limit).
    static let lookupChunk = 500

    private static func item(_ row: Row) -> RetryItem {
        RetryItem(url: row["url"], reason: row["reason"], message: row["message"], attempts: row["attempts"],
                  firstFailedAt: Date(timeIntervalSince1970: row["first_failed_at"]),
                  lastFailedAt: Date(timeIntervalSince1970: row["last_failed_at"]))
    }

    /// The queue, oldest failure first.
    package func all() async throws -> [RetryItem] {
        try await db.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM retry_queue ORDER BY first_failed_at, url").map(Self.item)
        }
    }
}
