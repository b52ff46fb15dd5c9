@_spi(Benchmarks) import ArtCacheCore
import Foundation
internal import GRDB

/// Hooks for `Benchmarks/` only: building large indexes quickly and timing
/// the index without the network. Not part of the supported API.
extension CacheStore {
    /// Inserts `count` synthetic original rows in one transaction, URLs
    /// `https://HOST/item/N.jpg`, accessed one second apart, each with an
    /// inline blob of `inlineBytes` bytes (0: a row pointing at no file).
    @_spi(Benchmarks) public func insertSyntheticRows(count: Int, startingAt start: Int = 0, host: String = "bench.test",
                                                      size: Int64 = 40_000, inlineBytes: Int = 0) async throws {
        let base = Date().timeIntervalSince1970 - Double(count + start)
        let blob = Data(repeating: 0xAB, count: inlineBytes)
        let sha = CacheKey.sha256Hex(blob)
        try await db.write { db in
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
    @_spi(Benchmarks) public func lookupIndexOnly(key: CacheKey) async throws -> Bool {
        guard let entry = try await entry(forKey: key) else {
            recordMiss()
            return false
        }
        recordHit(entry)
        return true
    }
}

extension CacheStore {
    /// One round trip through the blocking pool doing nothing: what an
    /// awaited lookup pays for running its read off Swift's cooperative pool.
    @_spi(Benchmarks) public func blockingPoolRoundTrip() async throws {
        try await Blocking.run { () }
    }
}
