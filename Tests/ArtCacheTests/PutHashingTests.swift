import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheStore

/// A put's SHA-256 is taken off Swift's cooperative pool for large bodies
/// (with the temp-file write for file blobs, on the blocking pool for large
/// inline ones): whichever way, the recorded hash is the bytes' and it
/// decides whether a replaced original's variants are stale.
@Suite("Store: put hashing")
struct PutHashingTests {
    @Test(arguments: [1_000, 300_000, 2_000_000])
    func theRecordedHashIsTheBytesHashAndDecidesStaleVariants(size: Int) async throws {
        let dir = TempDir()
        // 1 MiB inline: 1000 bytes are hashed in place, 300 KB on the blocking pool, 2 MB with its temp file.
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path, inlineMax: 1 << 20))
        let data = Fixtures.pngLike(size: size, seed: 7)
        let stored = try await store.put(url: "https://h/a.png", data: data)
        #expect(stored.entry.isInline == (size <= 1 << 20))
        #expect(stored.entry.sha256 == CacheKey.sha256Hex(data))
        let variant = Fixtures.pngLike(size: size / 2, seed: 9)
        let rendered = try await store.putVariant(parent: stored.entry.cacheKey, spec: "10x10", data: variant, width: 10, height: 10)
        #expect(rendered.sha256 == CacheKey.sha256Hex(variant))
        #expect(rendered.sourceSHA256 == stored.entry.sha256)
        // The same bytes again: the variant is still current.
        try await store.put(url: "https://h/a.png", data: data)
        #expect(try await store.variants(of: stored.entry.cacheKey).count == 1)
        // New bytes: it is stale and goes.
        let changed = try await store.put(url: "https://h/a.png", data: Fixtures.pngLike(size: size, seed: 8))
        #expect(changed.entry.sha256 == CacheKey.sha256Hex(Fixtures.pngLike(size: size, seed: 8)))
        #expect(try await store.variants(of: stored.entry.cacheKey).isEmpty)
        #expect(try await store.verify(hash: true).remaining == 0)
        try await store.close()
    }
}
