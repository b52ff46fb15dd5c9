@_spi(Benchmarks) import ArtCacheCore
@_spi(Benchmarks) import ArtCacheRender
@_spi(Benchmarks) import ArtCacheStore
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
///   `get`, or by an older artcache — a background job at the lowest
///   priority decodes it small (a 1/8 libjpeg-turbo decode for JPEG, ~250 µs
///   for a 40 KB file; libvips shrink-on-load otherwise).
/// - ``info(for:priority:options:)`` computes them at once when missing;
///   `verify --repair` fills in every row.
///
/// They are recorded once a put written behind is committed, and only onto
/// the bytes they were computed from. Storing bytes alone (`prefetch
/// --no-thumbnails`, `get`) decodes nothing: that path runs at the
/// network's speed (Benchmarks/RESULTS.md, P3).
extension ImagePipeline {
    /// The size and placeholder of the image at `url` (fetched first when not
    /// cached, unless `options` has `.cacheOnly`). Computed now when the
    /// index does not hold them yet, and recorded.
    public func info(for url: String, priority: ImagePriority = .normal,
                     options: ImageRequest.Options = []) async throws(ArtCacheError) -> ImageInfo {
        do {
            let normalized = try NormalizedURL(url)
            let outcome = try await original(normalized, mode: FetchMode(options), behind: true,
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
        return intrinsicsJobs.withLock { jobs -> Bool in
            guard !jobs.closed, !jobs.attempted.contains(job) else { return false }
            if jobs.attempted.count >= Self.intrinsicsMemoLimit { jobs.attempted.removeAll(keepingCapacity: true) }
            jobs.attempted.insert(job)
            return true
        }
    }

    /// Starts the background job for `entry` (an original's row) when
    /// ``claimIntrinsics(_:)`` gives it. `data`: its bytes when at hand
    /// (else read from the cache).
    func computeIntrinsicsBehind(of entry: CacheEntry, data: Data?) {
        guard claimIntrinsics(entry) else { return }
        let job = entry.key + ":" + entry.sha256
        let task = Task.detached(priority: .background) { [self] in
            defer { _ = intrinsicsJobs.withLock { $0.running.removeValue(forKey: job) } }
            do {
                try Task.checkCancellation()
                // The row read with its bytes: they are what the sha256 the
                // record is checked against names.
                var source = data.map { (entry: entry, data: $0) }
                if source == nil, let hit = try await store.lookup(key: entry.cacheKey, counting: false) {
                    source = (hit.entry, hit.data)
                }
                guard let source, source.entry.thumbHash == nil else { return }
                let intrinsics = try await renderer.intrinsics(of: source.data, priority: PriorityHandle(.veryLow))
                try await record(intrinsics, of: source.entry)
            } catch is CancellationError {
            } catch {
                logger.debug("no placeholder for an original", metadata: ["url": "\(entry.url)", "error": "\(error)"])
            }
        }
        intrinsicsJobs.withLock { jobs in
            if jobs.closed { task.cancel() } else { jobs.running[job] = task }
        }
    }

    /// Records `intrinsics` in `entry`'s row (if it still holds those bytes).
    func record(_ intrinsics: Intrinsics, of entry: CacheEntry) async throws {
        try await store.setPlaceholder(key: entry.key, sha256: entry.sha256, OriginalIntrinsics(intrinsics))
    }

    /// At close: no job starts any more; those running are cancelled and
    /// awaited (an original whose job did not finish gets it when next read).
    func stopIntrinsicsJobs() async {
        let running = intrinsicsJobs.withLock { jobs -> [Task<Void, Never>] in
            jobs.closed = true
            return Array(jobs.running.values)
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }

    /// Returns once no intrinsics job runs (tests, benchmarks); jobs started
    /// meanwhile are waited for too.
    package func waitForIntrinsicsJobs() async {
        while let task = intrinsicsJobs.withLock({ $0.running.values.first }) { await task.value }
    }

    /// Computes and records the intrinsics of every original that lacks them
    /// (`verify --repair`), `batch` rows at a time. Returns (computed, failed):
    /// bytes that do not decode are counted, never fatal.
    package func fillIntrinsics(batch: Int = 256) async throws(ArtCacheError) -> (computed: Int, failed: Int) {
        var computed = 0, failed = 0
        var after: String?
        do {
            while true {
                let rows = try await store.originalsWithoutPlaceholder(after: after, limit: batch)
                guard let last = rows.last else { break }
                after = last.key
                for entry in rows {
                    guard let hit = try await store.lookup(key: entry.cacheKey, counting: false) else { continue }
                    do {
                        let intrinsics = try await renderer.intrinsics(of: hit.data, priority: PriorityHandle(.low))
                        try await record(intrinsics, of: hit.entry)
                        computed += 1
                    } catch let error as RenderError {
                        failed += 1
                        logger.debug("no placeholder for an original", metadata: ["url": "\(entry.url)", "error": "\(error)"])
                    }
                }
            }
        } catch {
            throw ArtCacheError(any: error, context: "cannot compute placeholders")
        }
        return (computed, failed)
    }
}

/// The pipeline's background intrinsics jobs.
struct IntrinsicsJobs {
    var running: [String: Task<Void, Never>] = [:]
    /// Jobs started in this process (bounded; emptied when full): a row
    /// whose bytes do not decode is not tried again on every read.
    var attempted: Set<String> = []
    var closed = false
}

extension OriginalIntrinsics {
    init(_ intrinsics: Intrinsics) {
        self.init(width: intrinsics.width, height: intrinsics.height, color: intrinsics.placeholder.color,
                  thumbHash: Data(intrinsics.placeholder.thumbHash))
    }
}

extension ImageInfo {
    init(url: String, intrinsics: Intrinsics) {
        self.init(url: url, width: intrinsics.width, height: intrinsics.height, color: intrinsics.placeholder.color,
                  thumbHash: Data(intrinsics.placeholder.thumbHash))
    }
}
