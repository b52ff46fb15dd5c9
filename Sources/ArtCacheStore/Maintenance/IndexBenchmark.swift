import ArtCacheCore
import Foundation
internal import GRDB

/// What `Benchmarks/` (a package of its own, which cannot see this package's
/// `package` declarations) measures of the index, and nothing more: build a
/// large index quickly, then time opening, lookups, writes and eviction
/// without the network. Not part of the supported API; nothing in this
/// package uses it.
@_spi(Benchmarks) public final class IndexBenchmark: Sendable {
    let store: CacheStore

    private init(store: CacheStore) { self.store = store }

    /// Opens (creating it if needed) the cache in `settings.directory`.
    public static func open(settings: CacheSettings) async throws -> IndexBenchmark {
        IndexBenchmark(store: try await CacheStore.open(settings: settings))
    }

    /// The key of `url` once normalized (what every lookup hashes).
    public static func key(_ url: String) throws -> CacheKey { try NormalizedURL(url).key }

    public var directory: URL { store.directory }
    public var settings: CacheSettings { store.settings }

    /// Inserts `count` synthetic original rows in one transaction, URLs
    /// `https://HOST/item/N.jpg`, accessed one second apart, each with an
    /// inline blob of `inlineBytes` bytes (0: a row pointing at no file).
    public func insertSyntheticRows(count: Int, startingAt start: Int = 0, host: String = "bench.test",
                                    size: Int64 = 40_000, inlineBytes: Int = 0) async throws {
        let base = Date().timeIntervalSince1970 - Double(count + start)
        let blob = Data(repeating: 0xAB, count: inlineBytes)
        let sha = CacheKey.sha256Hex(blob)
        try await store.db.write { db in
            let entry = try db.makeStatement(sql: """
                INSERT INTO entry (key, url, host, kind, blob, content_type, size, sha256, created_at, accessed_at, hit_count)
                VALUES (?, ?, ?, 'original', ?, 'image/jpeg', ?, ?, ?, ?, 0)
                """)
            let inline = try db.makeStatement(sql: "INSERT INTO inline_blob (key, data) VALUES (?, ?)")
            for index in start..<(start + count) {
                let url = try NormalizedURL("https://\(host)/item/\(index).jpg")
                let key = url.key.hex
                let at = base + Double(index)
                if inlineBytes > 0 {
                    try entry.execute(arguments: [key, url.string, host, nil, blob.count, sha, at, at])
                    try inline.execute(arguments: [key, blob])
                } else {
                    try entry.execute(arguments: [key, url.string, host, "objects/none/\(key)", size, "", at, at])
                }
            }
            let rowSize = inlineBytes > 0 ? Int64(inlineBytes) : size
            try Totals(entries: count, originals: count, bytes: rowSize * Int64(count),
                       inlineBytes: inlineBytes > 0 ? rowSize * Int64(count) : 0).apply(db)
        }
    }

    /// An index lookup plus the batched access touch of a hit, without reading the blob.
    public func lookupIndexOnly(key: CacheKey) async throws -> Bool {
        guard let entry = try await store.entry(forKey: key) else {
            store.recordMiss()
            return false
        }
        store.recordHit(entry)
        return true
    }

    /// A whole lookup (row, touch, bytes): the size of the bytes of a hit.
    public func lookup(key: CacheKey) async throws -> Int? { try await store.lookup(key: key)?.data.count }

    /// The same lookup on the calling thread (a thread that may block).
    public func lookupBlocking(key: CacheKey) throws -> Int? { try store.lookupBlocking(key: key)?.data.count }

    /// One round trip through the blocking pool doing nothing: what an
    /// awaited lookup pays for running its read off Swift's cooperative pool.
    public func blockingPoolRoundTrip() async throws { try await Blocking.run { () } }

    /// Stores an original (blob and row), as a download does.
    public func put(url: String, data: Data, contentType: String) async throws {
        _ = try await store.put(url: url, data: data, contentType: contentType, declaredType: contentType)
    }

    /// Entries and bytes the index counts.
    public func totals() async throws -> (entries: Int, bytes: Int64) {
        let stats = try await store.stats()
        return (stats.entries, stats.bytes)
    }

    /// Evicts least recently used entries until the cache holds `bytes` at most.
    public func purge(toSize bytes: Int64) async throws { _ = try await store.purge(PurgeRequest(toSize: bytes)) }

    /// Evicts to the low-water mark when over a limit (as after a write).
    public func enforceLimits() async throws { try await store.enforceLimits() }

    /// Returns once evicted rows' blobs are reclaimed.
    public func waitForReclaim() async { await store.waitForReclaim() }

    public func close() async throws { try await store.close() }
}
