import ArtCacheCore
import Foundation
internal import GRDB

/// A snapshot of the cache, as `artcache stats` prints it. Encoded with
/// snake_case keys; this JSON shape is documented in docs/commands.md and stable.
package struct CacheStats: Sendable, Codable, Equatable {
    package struct Host: Sendable, Codable, Equatable {
        package var entries: Int
        package var bytes: Int64
    }

    package var directory: String
    package var entries: Int
    package var originals: Int
    package var variants: Int
    package var bytes: Int64
    /// Of `bytes`: blobs kept inside the database (up to `inline_max`) and in files.
    package var inlineBytes: Int64 = 0
    package var fileBytes: Int64 = 0
    package var maxBytes: Int64
    package var maxEntries: Int
    package var hits: Int64
    package var misses: Int64
    package var evictions: Int64
    package var evictedBytes: Int64
    /// `"declared -> sniffed"` → count.
    package var repairs: [String: Int]
    /// Host → entries and bytes (variants count under their original's host).
    package var hosts: [String: Host]
    package var oldestAccess: Date?
    package var newestAccess: Date?
    /// URLs waiting in the persistent retry queue.
    package var retryQueue: Int
    /// URLs dropped from the full retry queue (oldest first), ever.
    package var retryDropped: Int64 = 0
    /// Puts behind an answer that were not stored (the store-behind queue
    /// was full, or the write failed): `writes_dropped`.
    package var writesDropped: Int64 = 0
    /// This process's memory tier (zero when read from the store alone).
    package var memory = MemoryTierStats()
    /// Originals by freshness, and the failures remembered (`freshness`).
    package var freshness = Freshness()

    /// `stats --json` `freshness`: originals by where they stand against the
    /// origin's freshness (variants follow their original), and the URLs
    /// whose final failure is remembered (`[download] negative_ttl`).
    package struct Freshness: Sendable, Codable, Equatable {
        /// Within the origin's freshness (or given none): served as stored.
        package var fresh = 0
        /// Expired within its stale-while-revalidate window: answered at
        /// once, revalidated behind.
        package var stale = 0
        /// Expired past that window (or `must-revalidate`): the next request waits for the origin.
        package var expired = 0
        /// URLs that fail at once (404, 410, not an image) until their negative_ttl ends.
        package var negative = 0

        package init() {}
    }

    enum CodingKeys: String, CodingKey {
        case directory, entries, originals, variants, bytes, inlineBytes, fileBytes, maxBytes, maxEntries, hits, misses
        case evictions, evictedBytes, repairs, hosts, oldestAccess, newestAccess, retryQueue, retryDropped, writesDropped, memory
        case freshness
    }

    /// Every key is always present (absent dates are null), so the JSON is stable.
    package func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(directory, forKey: .directory)
        try c.encode(entries, forKey: .entries)
        try c.encode(originals, forKey: .originals)
        try c.encode(variants, forKey: .variants)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(inlineBytes, forKey: .inlineBytes)
        try c.encode(fileBytes, forKey: .fileBytes)
        try c.encode(maxBytes, forKey: .maxBytes)
        try c.encode(maxEntries, forKey: .maxEntries)
        try c.encode(hits, forKey: .hits)
        try c.encode(misses, forKey: .misses)
        try c.encode(evictions, forKey: .evictions)
        try c.encode(evictedBytes, forKey: .evictedBytes)
        try c.encode(repairs, forKey: .repairs)
        try c.encode(hosts, forKey: .hosts)
        try c.encode(oldestAccess, forKey: .oldestAccess)
        try c.encode(newestAccess, forKey: .newestAccess)
        try c.encode(retryQueue, forKey: .retryQueue)
        try c.encode(retryDropped, forKey: .retryDropped)
        try c.encode(writesDropped, forKey: .writesDropped)
        try c.encode(memory, forKey: .memory)
        try c.encode(freshness, forKey: .freshness)
    }
}

/// The in-process memory tier's counters (`stats --json`: `memory`).
package struct MemoryTierStats: Sendable, Codable, Equatable {
    package var entries = 0
    package var bytes: Int64 = 0
    package var hits: Int64 = 0
    package var misses: Int64 = 0
    package var evictions: Int64 = 0
    package var maxBytes: Int64 = 0
    package var maxEntries = 0

    package init() {}
}

extension StoreMaintenance {
    package func stats(now: Date = Date()) async throws -> CacheStats {
        await store.waitForWritesBehind()  // what this process answered is counted as stored
        try await store.flush()
        let directory = self.directory.path
        let settings = self.settings
        return try await db.read { db in
            let totals = try Schema.totals(db)
            var counters: [String: Int64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, value FROM counter") {
                counters[row["name"]] = row["value"]
            }
            var repairs: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT declared, sniffed, count FROM repair") {
                repairs["\(row["declared"] as String) -> \(row["sniffed"] as String)"] = row["count"]
            }
            var hosts: [String: CacheStats.Host] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT host, count(*) AS n, sum(size) AS b FROM entry WHERE \(Schema.live()) GROUP BY host") {
                hosts[row["host"]] = CacheStats.Host(entries: row["n"], bytes: row["b"])
            }
            let oldest = try Double.fetchOne(db, sql: "SELECT min(accessed_at) FROM entry WHERE \(Schema.live())")
            let newest = try [Double.fetchOne(db, sql: "SELECT max(accessed_at) FROM entry WHERE \(Schema.live())"),
                              TouchLog.newest(db)].compactMap { $0 }.max()
            let retry = try Int.fetchOne(db, sql: "SELECT count(*) FROM retry_queue") ?? 0
            let freshness = try Self.freshness(db, now: now, staleWhileRevalidate: settings.staleWhileRevalidate)
            var stats = CacheStats(
                directory: directory, entries: totals.entries, originals: totals.originals,
                variants: totals.entries - totals.originals, bytes: totals.bytes,
                inlineBytes: totals.inlineBytes, fileBytes: totals.fileBytes,
                maxBytes: settings.maxBytes, maxEntries: settings.maxEntries,
                hits: counters["hits"] ?? 0, misses: counters["misses"] ?? 0,
                evictions: counters["evictions"] ?? 0, evictedBytes: counters["evicted_bytes"] ?? 0,
                repairs: repairs, hosts: hosts,
                oldestAccess: oldest.map(Date.init(timeIntervalSince1970:)),
                newestAccess: newest.map(Date.init(timeIntervalSince1970:)),
                retryQueue: retry, retryDropped: counters["retry_dropped"] ?? 0,
                writesDropped: counters["writes_dropped"] ?? 0)
            stats.freshness = freshness
            return stats
        }
    }

    /// Live originals counted by freshness at `now` (one pass over the
    /// originals: `stats`, not a scrape), plus the negative answers in force.
    static func freshness(_ db: Database, now: Date, staleWhileRevalidate: TimeInterval) throws -> CacheStats.Freshness {
        let row = try Row.fetchOne(db, sql: """
            SELECT coalesce(sum(expires_at IS NULL OR expires_at > :now), 0),
                coalesce(sum(expires_at <= :now AND (directives & \(CacheEntry.mustRevalidateBit)) = 0
                    AND :now - expires_at < coalesce(stale_while_revalidate, :swr)), 0),
                count(*)
            FROM entry WHERE kind = 'original' AND \(Schema.live())
            """, arguments: ["now": now.timeIntervalSince1970, "swr": staleWhileRevalidate])
        var freshness = CacheStats.Freshness()
        freshness.fresh = row?[0] ?? 0
        freshness.stale = row?[1] ?? 0
        freshness.expired = (row?[2] ?? 0) - freshness.fresh - freshness.stale
        freshness.negative = try NegativeAnswers.count(db, now: now)
        return freshness
    }
}
