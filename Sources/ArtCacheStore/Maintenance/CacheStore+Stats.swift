@_spi(Benchmarks) import ArtCacheCore
import Foundation
internal import GRDB

/// A snapshot of the cache, as `artcache stats` prints it. Encoded with
/// snake_case keys; this JSON shape is documented in the README and stable.
@_spi(Benchmarks) public struct CacheStats: Sendable, Codable, Equatable {
    @_spi(Benchmarks) public struct Host: Sendable, Codable, Equatable {
        @_spi(Benchmarks) public var entries: Int
        @_spi(Benchmarks) public var bytes: Int64
    }

    @_spi(Benchmarks) public var directory: String
    @_spi(Benchmarks) public var entries: Int
    @_spi(Benchmarks) public var originals: Int
    @_spi(Benchmarks) public var variants: Int
    @_spi(Benchmarks) public var bytes: Int64
    /// Of `bytes`: blobs kept inside the database (up to `inline_max`) and in files.
    @_spi(Benchmarks) public var inlineBytes: Int64 = 0
    @_spi(Benchmarks) public var fileBytes: Int64 = 0
    @_spi(Benchmarks) public var maxBytes: Int64
    @_spi(Benchmarks) public var maxEntries: Int
    @_spi(Benchmarks) public var hits: Int64
    @_spi(Benchmarks) public var misses: Int64
    @_spi(Benchmarks) public var evictions: Int64
    @_spi(Benchmarks) public var evictedBytes: Int64
    /// `"declared -> sniffed"` → count.
    @_spi(Benchmarks) public var repairs: [String: Int]
    /// Host → entries and bytes (variants count under their original's host).
    @_spi(Benchmarks) public var hosts: [String: Host]
    @_spi(Benchmarks) public var oldestAccess: Date?
    @_spi(Benchmarks) public var newestAccess: Date?
    /// URLs waiting in the persistent retry queue.
    @_spi(Benchmarks) public var retryQueue: Int
    /// URLs dropped from the full retry queue (oldest first), ever.
    @_spi(Benchmarks) public var retryDropped: Int64 = 0
    /// Puts behind an answer that were not stored (the store-behind queue
    /// was full, or the write failed): `writes_dropped`.
    @_spi(Benchmarks) public var writesDropped: Int64 = 0
    /// This process's memory tier (zero when read from the store alone).
    @_spi(Benchmarks) public var memory = MemoryTierStats()
    /// Originals by freshness, and the failures remembered (`freshness`).
    @_spi(Benchmarks) public var freshness = Freshness()

    /// `stats --json` `freshness`: originals by where they stand against the
    /// origin's freshness (variants follow their original), and the URLs
    /// whose final failure is remembered (`[download] negative_ttl`).
    @_spi(Benchmarks) public struct Freshness: Sendable, Codable, Equatable {
        /// Within the origin's freshness (or given none): served as stored.
        @_spi(Benchmarks) public var fresh = 0
        /// Expired within its stale-while-revalidate window: answered at
        /// once, revalidated behind.
        @_spi(Benchmarks) public var stale = 0
        /// Expired past that window (or `must-revalidate`): the next request waits for the origin.
        @_spi(Benchmarks) public var expired = 0
        /// URLs that fail at once (404, 410, not an image) until their negative_ttl ends.
        @_spi(Benchmarks) public var negative = 0

        @_spi(Benchmarks) public init() {}
    }

    enum CodingKeys: String, CodingKey {
        case directory, entries, originals, variants, bytes, inlineBytes, fileBytes, maxBytes, maxEntries, hits, misses
        case evictions, evictedBytes, repairs, hosts, oldestAccess, newestAccess, retryQueue, retryDropped, writesDropped, memory
        case freshness
    }

    /// Every key is always present (absent dates are null), so the JSON is stable.
    @_spi(Benchmarks) public func encode(to encoder: Encoder) throws {
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
@_spi(Benchmarks) public struct MemoryTierStats: Sendable, Codable, Equatable {
    @_spi(Benchmarks) public var entries = 0
    @_spi(Benchmarks) public var bytes: Int64 = 0
    @_spi(Benchmarks) public var hits: Int64 = 0
    @_spi(Benchmarks) public var misses: Int64 = 0
    @_spi(Benchmarks) public var evictions: Int64 = 0
    @_spi(Benchmarks) public var maxBytes: Int64 = 0
    @_spi(Benchmarks) public var maxEntries = 0

    @_spi(Benchmarks) public init() {}
}

extension CacheStore {
    @_spi(Benchmarks) public func stats(now: Date = Date()) async throws -> CacheStats {
        await waitForWritesBehind()  // what this process answered is counted as stored
        try await flush()
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
        freshness.negative = try negativeCount(db, now: now)
        return freshness
    }
}
