import Foundation
internal import GRDB

/// Hooks for `Benchmarks/` only: building large indexes quickly and timing
/// the index without blob I/O. Not part of the supported API.
extension CacheStore {
    /// Inserts `count` synthetic original rows (no blobs) in one transaction,
    /// URLs `https://HOST/item/N.jpg`, accessed one second apart.
    @_spi(Benchmarks) public func insertSyntheticRows(count: Int, startingAt start: Int = 0, host: String = "bench.test",
                                                      size: Int64 = 40_000) async throws {
        let base = Date().timeIntervalSince1970 - Double(count + start)
        try await db.write { db in
            let statement = try db.makeStatement(sql: """
                INSERT INTO entry (key, url, host, kind, blob, content_type, size, sha256, created_at, accessed_at, hit_count)
                VALUES (?, ?, ?, 'original', ?, 'image/jpeg', ?, '', ?, ?, 0)
                """)
            for index in start..<(start + count) {
                let url = try NormalizedURL("https://\(host)/item/\(index).jpg")
                let key = url.key.hex
                let at = base + Double(index)
                try statement.execute(arguments: [key, url.string, host, "objects/none/\(key)", size, at, at])
            }
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
