import Foundation

/// The cache's maintenance, for the CLI and operators: every call goes
/// through the pipeline, errors are `ArtCacheError`s.
extension ImagePipeline {
    /// What the cache holds and how it has been used, with this process's
    /// memory tier.
    public func stats() async throws(ArtCacheError) -> CacheStats {
        var stats = try await storage("cannot read stats") { try await $0.stats() }
        stats.memory = memory.stats
        return stats
    }

    /// Removes what `request` selects (originals take their variants), from
    /// disk and from the memory tier.
    public func purge(_ request: PurgeRequest) async throws(ArtCacheError) -> PurgeReport {
        let report = try await storage("cannot purge") { try await $0.purge(request) }
        if !request.dryRun && report.removed > 0 { memory.removeAll() }
        return report
    }

    /// Checks the index against the blobs; `repair` fixes what it finds.
    public func verify(repair: Bool = false, hash: Bool = false) async throws(ArtCacheError) -> VerifyReport {
        try await storage("cannot verify") { try await $0.verify(repair: repair, hash: hash) }
    }

    /// URLs that failed on the network and wait to be fetched again.
    public func retryQueue() async throws(ArtCacheError) -> [RetryItem] {
        try await storage("cannot read the retry queue") { try await $0.retryQueue() }
    }

    /// One PNG tiling `cells` (nil: a blank cell) in order.
    public func contactSheet(_ cells: [Data?], cell: Int = 100, columns: Int = 8) async throws(ArtCacheError) -> Data {
        do {
            return try await renderer.contactSheet(cells, cell: cell, columns: columns)
        } catch {
            throw ArtCacheError(any: error, context: "contact sheet")
        }
    }

    /// Where a file blob was when `entry` was read, for display (`--json`'s
    /// `path`); nil for a blob kept inside the database. Not a way to read
    /// the bytes: another process's eviction may remove the file at any time;
    /// ``ImageResponse/data`` holds them.
    public func blobLocation(of entry: CacheEntry) -> String? {
        entry.blob.map { store.directory.path + "/" + $0 }
    }

    /// The libvips version the renderer uses.
    public var libvipsVersion: String { renderer.libvipsVersion }

    private func storage<T: Sendable>(_ context: String, _ body: (CacheStore) async throws -> T) async throws(ArtCacheError) -> T {
        do {
            return try await body(store)
        } catch {
            throw ArtCacheError(any: error, context: context)
        }
    }
}
