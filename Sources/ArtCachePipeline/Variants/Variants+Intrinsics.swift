import ArtCacheCore
import ArtCacheRender
import ArtCacheStore
import Foundation

/// Intrinsics (size and placeholder) of originals: computed once, off the
/// answer's path, and kept in the index.
///
/// - When thumbnails are rendered from an original that lacks them, the
///   render's own decode gives them (~50 µs more on the JPEG fast path;
///   a small decode of their own after the render otherwise), recorded in
///   the original's row by the variant's own write.
/// - When an original is read (served as an original, or its stored
///   thumbnail is) without them — stored by `prefetch --no-thumbnails` or
///   `get`, or by an older artcache — a `placeholder` job of the background
///   scheduler (lowest priority, bounded, deduplicated) reads its bytes when
///   it starts and decodes them small (a 1/8 libjpeg-turbo decode for JPEG,
///   ~250 µs for a 40 KB file; libvips shrink-on-load otherwise), with the
///   render pool's reserved share for background work.
/// - ``info(for:priority:options:)`` computes them at once when missing;
///   `verify --repair` fills in every row.
///
/// They are recorded once a put written behind is committed, and only onto
/// the bytes they were computed from. Storing bytes alone (`prefetch
/// --no-thumbnails`, `get`) decodes nothing: that path runs at the
/// network's speed (Benchmarks/RESULTS.md, P3).
extension Variants {
    /// The size and placeholder of the image at `url` (fetched first when not
    /// cached, unless `options` has `.cacheOnly`). Computed now when the
    /// index does not hold them yet, and recorded.
    public func info(for url: String, priority: ImagePriority = .normal,
                     options: ImageRequest.Options = []) async throws(ArtCacheError) -> ImageInfo {
        do {
            let normalized = try NormalizedURL(url)
            let outcome = try await originals.original(normalized, mode: FetchMode(options), behind: true,
                                             priority: PriorityHandle(priority))
            if let entry = outcome.entry, let known = ImageInfo(entry: entry) { return known }
            let intrinsics = try await renderer.intrinsics(of: outcome.data, priority: PriorityHandle(priority))
            if let entry = outcome.entry { try await record(intrinsics, of: entry) }
            return ImageInfo(url: outcome.entry?.url ?? normalized.string, intrinsics: intrinsics)
        } catch {
            throw ArtCacheError(any: error, context: url)
        }
    }

    /// Claims the intrinsics of `entry` (an original's row) for the caller:
    /// true when the row lacks them and no one in this process claimed these
    /// bytes before (bounded memo: a row whose bytes do not decode is not
    /// tried again on every read).
    func claimIntrinsics(_ entry: CacheEntry) -> Bool {
        guard entry.kind == .original, entry.thumbHash == nil, !entry.sha256.isEmpty else { return false }
        let job = entry.key + ":" + entry.sha256
        return intrinsicsAttempts.claim(job, true)
    }

    /// Forgets a claim whose job did not run (dropped, or the row was not
    /// committed yet): the original's next read tries again.
    private func unclaimIntrinsics(_ entry: CacheEntry) {
        let job = entry.key + ":" + entry.sha256
        intrinsicsAttempts.remove(job)
    }

    /// Queues the `placeholder` job for `entry` (an original's row) when
    /// ``claimIntrinsics(_:)`` gives it. The job holds no bytes while it
    /// waits: it reads the row and its bytes when it starts.
    func computeIntrinsicsBehind(of entry: CacheEntry) {
        guard claimIntrinsics(entry) else { return }
        let key = BackgroundJobKey(.placeholder, key: entry.key, spec: entry.sha256)
        let outcome = background.submit(key, priority: .veryLow, onDrop: { [self] in unclaimIntrinsics(entry) }) { [self] in
            do {
                try Task.checkCancellation()
                // The row read with its bytes: they are what the sha256 the
                // record is checked against names.
                guard let hit = try await store.lookup(key: entry.cacheKey, counting: false) else {
                    return unclaimIntrinsics(entry)  // not committed yet (written behind), or evicted
                }
                guard hit.entry.thumbHash == nil else { return }
                let intrinsics = try await renderer.intrinsics(of: hit.data, priority: PriorityHandle(.veryLow, background: true))
                try await record(intrinsics, of: hit.entry)
            } catch is CancellationError {
                unclaimIntrinsics(entry)
            } catch {
                logger.debug("no placeholder for an original", metadata: ["url": "\(entry.url)", "error": "\(error)"])
            }
        }
        if outcome != .queued { unclaimIntrinsics(entry) }
    }

    /// Records `intrinsics` in `entry`'s row (if it still holds those bytes).
    func record(_ intrinsics: Intrinsics, of entry: CacheEntry) async throws {
        try await store.setPlaceholder(key: entry.key, sha256: entry.sha256, OriginalIntrinsics(intrinsics))
    }

    /// Returns once no placeholder job waits or runs (tests, benchmarks);
    /// jobs queued meanwhile are waited for too.
    package func waitForIntrinsicsJobs() async {
        await background.waitUntilIdle(.placeholder)
    }

    /// Computes and records the intrinsics of every original that lacks them
    /// (`verify --repair`), `batch` rows at a time. Each one is a `placeholder`
    /// job of the background scheduler (at `.low`, ahead of the lazy ones at
    /// `.veryLow`; the same key as a lazy job, so an original already queued
    /// is not computed twice); a batch is queued, then waited for, so the
    /// scheduler's bounds are never reached by the repair itself. Returns
    /// (computed, failed): failed counts originals whose bytes do not decode;
    /// one a lazy job computed meanwhile is in neither.
    package func fillIntrinsics(batch: Int = 256) async throws(ArtCacheError) -> (computed: Int, failed: Int) {
        let counts = Locked<(computed: Int, failed: Int, storeError: (any Error)?)>((0, 0, nil))
        var after: String?
        do {
            while true {
                try Task.checkCancellation()
                let rows = try await store.originalsWithoutPlaceholder(after: after, limit: batch)
                guard let last = rows.last else { break }
                after = last.key
                for entry in rows {
                    let key = BackgroundJobKey(.placeholder, key: entry.key, spec: entry.sha256)
                    background.submit(key, priority: .low) { [self] in
                        do {
                            try Task.checkCancellation()
                            guard let hit = try await store.lookup(key: entry.cacheKey, counting: false),
                                  hit.entry.thumbHash == nil else { return }
                            let intrinsics = try await renderer.intrinsics(of: hit.data, priority: PriorityHandle(.low))
                            try await record(intrinsics, of: hit.entry)
                            counts.withLock { $0.computed += 1 }
                        } catch is CancellationError {
                        } catch let error as RenderError {
                            counts.withLock { $0.failed += 1 }
                            logger.debug("no placeholder for an original", metadata: ["url": "\(entry.url)", "error": "\(error)"])
                        } catch {
                            counts.withLock { if $0.storeError == nil { $0.storeError = error } }
                        }
                    }
                }
                await background.waitUntilIdle(.placeholder)
                if let error = counts.withLock({ $0.storeError }) { throw error }
            }
        } catch {
            throw ArtCacheError(any: error, context: "cannot compute placeholders")
        }
        let result = counts.withLock { $0 }
        return (result.computed, result.failed)
    }
}

extension OriginalIntrinsics {
    init(_ intrinsics: Intrinsics) {
        self.init(width: intrinsics.width, height: intrinsics.height, color: intrinsics.placeholder.color,
                  thumbHash: Data(intrinsics.placeholder.thumbHash), frames: intrinsics.frames)
    }
}

extension ImageInfo {
    init(url: String, intrinsics: Intrinsics) {
        self.init(url: url, width: intrinsics.width, height: intrinsics.height, color: intrinsics.placeholder.color,
                  thumbHash: Data(intrinsics.placeholder.thumbHash), frames: intrinsics.frames)
    }
}
