import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

/// The cache's maintenance, for the CLI and operators: every call goes
/// through the pipeline, errors are `ArtCacheError`s.
extension ImagePipeline {
    /// What the cache holds and how it has been used, with this process's
    /// memory tier.
    package func stats() async throws(ArtCacheError) -> CacheStats {
        var stats = try await storage("cannot read stats") { try await $0.stats() }
        stats.memory = memory.stats
        return stats
    }

    /// Removes what `request` selects (originals take their variants), from
    /// disk and from the memory tier.
    package func purge(_ request: PurgeRequest) async throws(ArtCacheError) -> PurgeReport {
        let report = try await storage("cannot purge") { try await $0.purge(request) }
        if !request.dryRun && report.removed > 0 { memory.removeAll() }
        return report
    }

    /// Checks the index against the blobs; `repair` fixes what it finds.
    /// With `repair`, it also computes the placeholders originals lack.
    package func verify(repair: Bool = false, hash: Bool = false) async throws(ArtCacheError) -> VerifyReport {
        var report = try await storage("cannot verify") { try await $0.verify(repair: repair, hash: hash) }
        if repair {
            (report.placeholdersComputed, report.placeholdersFailed) = try await fillIntrinsics()
        }
        report.placeholdersMissing = try await storage("cannot verify") { try await $0.countOriginalsWithoutPlaceholder() }
        return report
    }

    /// URLs that failed on the network and wait to be fetched again.
    public func retryQueue() async throws(ArtCacheError) -> [RetryItem] {
        try await storage("cannot read the retry queue") { try await $0.retries.all() }
    }

    /// One PNG tiling `cells` (nil: a blank cell) in order.
    package func contactSheet(_ cells: [Data?], cell: Int = 100, columns: Int = 8) async throws(ArtCacheError) -> Data {
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
    package func blobLocation(of entry: CacheEntry) -> String? {
        entry.blob.map { store.directory.path + "/" + $0 }
    }

    /// Work under way in this process, for metrics and health pages.
    package var activity: PipelineActivity {
        let downloads = downloader.activity
        let renders = renderer.activity
        let writes = store.writeBehindActivity
        return PipelineActivity(downloadsActive: downloads.active, downloadsQueued: downloads.queued,
                                rendersActive: renders.inProgress, rendersQueued: renders.waiting,
                                memoryEntries: memory.stats.entries, memoryBytes: memory.stats.bytes,
                                writesPending: writes.pending, writesDropped: writes.dropped,
                                renderJobs: renders.jobs, renderWakeups: renders.wakeups,
                                background: background.counts, backgroundBytes: background.queuedBytes)
    }

    /// Liveness: the index answers a read and libvips renders a 1x1 image.
    /// Throws the first failure (`.storage` or a render error).
    package func checkHealth() async throws(ArtCacheError) {
        _ = try await storage("the index does not answer") { try await $0.ping() }
        let renderer = self.renderer
        do {
            _ = try await renderer.onRenderThread(priority: PriorityHandle(.normal)) {
                try renderer.solidImage(width: 1, height: 1, rgb: [0, 0, 0], format: .png, quality: 80)
            }
        } catch {
            throw ArtCacheError(any: error, context: "libvips does not render")
        }
    }

    /// Whether this libvips writes `format` (AVIF needs libheif with an AV1 encoder).
    package func canEncode(_ format: VariantSpec.Format) async -> Bool {
        let renderer = self.renderer
        do {
            _ = try await renderer.onRenderThread(priority: PriorityHandle(.veryHigh)) {
                try renderer.solidImage(width: 8, height: 8, rgb: [128, 128, 128], format: format, quality: 50)
            }
            return true
        } catch {
            return false
        }
    }

    /// The libvips version the renderer uses.
    package var libvipsVersion: String { renderer.libvipsVersion }

    private func storage<T: Sendable>(_ context: String, _ body: (CacheStore) async throws -> T) async throws(ArtCacheError) -> T {
        do {
            return try await body(store)
        } catch {
            throw ArtCacheError(any: error, context: context)
        }
    }
}

/// Work under way in one pipeline (a snapshot).
package struct PipelineActivity: Sendable, Equatable {
    package var downloadsActive: Int
    package var downloadsQueued: Int
    package var rendersActive: Int
    package var rendersQueued: Int
    package var memoryEntries: Int
    package var memoryBytes: Int64
    /// Puts behind answers not committed yet; those not stored since the
    /// store opened (queue full or write failed).
    package var writesPending = 0
    package var writesDropped: Int64 = 0
    /// Renders the render threads took since the pipeline started, and the
    /// times a sleeping render thread woke to take one.
    package var renderJobs = 0
    package var renderWakeups = 0
    /// Work behind answers, by kind: waiting, running, dropped past a bound.
    package var background: [BackgroundKind: BackgroundCounts] = [:]
    /// Bytes the waiting background jobs hold.
    package var backgroundBytes: Int64 = 0
}
