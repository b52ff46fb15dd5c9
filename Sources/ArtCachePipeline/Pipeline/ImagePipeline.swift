import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import ArtCacheTier
import Foundation
import Logging

/// The image layer: one `ImagePipeline` per process (or per cache) serves
/// every front, the CLI and the thumbnail service.
///
/// ```swift
/// let pipeline = try await ImagePipeline.open(configuration: Configuration())
/// let thumb = try await pipeline.image(ImageRequest(url: url, width: 100, height: 100))
/// try await pipeline.close()
/// ```
///
/// A request goes memory tier → disk (SQLite index) → network (coalesced,
/// admitted by priority) → render (by priority), and comes back as an
/// `ImageResponse`; every failure is an `ArtCacheError`. The pipeline owns
/// the store, downloader, renderer and memory tier it builds.
public final class ImagePipeline: Sendable {
    public let configuration: Configuration
    let store: CacheStore
    let downloader: Downloader
    let renderer: Renderer
    let memory: MemoryCache
    let logger: Logger
    /// Loads of originals and renders of variants, one per key; one whose
    /// requesters all left is finished by ``background`` (`orphaned_flight`).
    let originals: Coalescer<OriginalFlight, FetchOutcome>
    let variants: Coalescer<VariantFlight, VariantOutcome>
    /// Placeholders made, by size and format (bounded by
    /// ``placeholderMemoLimit``; emptied when full: sizes come from requests).
    let placeholders = BoundedMemo<String, ImageResponse>(capacity: ImagePipeline.placeholderMemoLimit)
    static let placeholderMemoLimit = 64
    /// Requests already resolved (URL normalized, key hashed): a hot set of
    /// memory hits skips that work. Bounded; emptied when full.
    let resolvedRequests = BoundedMemo<ImageRequest, Resolved>(capacity: ImagePipeline.resolvedMemoLimit)
    static let resolvedMemoLimit = 4096
    /// Whether an original is animated (a GIF or WebP of 2+ frames), by its
    /// URL's key: asked of negotiated requests (ImagePipeline+Animation).
    /// Bounded; emptied when full.
    let animatedSources = BoundedMemo<String, Bool>(capacity: ImagePipeline.resolvedMemoLimit)
    /// The one owner of work behind answers: revalidations, placeholders,
    /// warm-ups, and the store's fold and reclaimer (docs/background.md). Closed first by ``close()``.
    package let background: BackgroundScheduler
    /// Originals whose intrinsics this process tried (ImagePipeline+Info).
    /// Bounded (``intrinsicsMemoLimit``; emptied when full).
    let intrinsicsAttempts = BoundedMemo<String, Bool>(capacity: ImagePipeline.intrinsicsMemoLimit)
    /// Format upgrades ended, by outcome (``upgradeCounts``).
    let upgrades = Locked(UpgradeCounts())
    static let intrinsicsMemoLimit = 65_536
    /// Profiles left out for a host after a rendition failed, until when
    /// (by "profile host"; ImagePipeline+Profiles).
    let profileFallbacks = Locked<[String: Date]>([:])
    /// Revalidations and stale answers so far (ImagePipeline+Freshness).
    let freshness = Locked(FreshnessCounters())
    /// The shared second tier, when `[tier2] endpoint` is set (ImagePipeline+Tier2).
    package let tier2: Tier2?

    init(configuration: Configuration, store: CacheStore, downloader: Downloader, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.background = store.background
        originals = Coalescer(adopt: Self.adopter(store.background))
        variants = Coalescer(adopt: Self.adopter(store.background))
        self.downloader = downloader
        self.renderer = Renderer(settings: configuration.thumbnails)
        self.memory = MemoryCache(settings: configuration.memory)
        self.logger = logger
        tier2 = configuration.tier2.isEnabled ? Tier2(settings: configuration.tier2, downloader: downloader, logger: logger) : nil
    }

    /// Opens the cache in `configuration.cache.directory` (creating it) and
    /// builds the downloader, renderer and memory tier. Call `close()` when done.
    public static func open(configuration: Configuration,
                            logger: Logger = Logger(label: "artcache")) async throws(ArtCacheError) -> ImagePipeline {
        do {
            try configuration.validate()
            let background = BackgroundScheduler(settings: configuration.background, kinds: BackgroundKind.pipelineKinds)
            let store = try await CacheStore.open(settings: configuration.cache, logger: logger, background: background)
            let downloader: Downloader
            do {
                downloader = try Downloader(settings: configuration.download, logger: logger)
            } catch {
                try? await store.close()  // nothing was written yet; the download error is the one to report
                throw error
            }
            return ImagePipeline(configuration: configuration, store: store, downloader: downloader, logger: logger)
        } catch {
            throw ArtCacheError(any: error, context: "cannot open the cache")
        }
    }

    /// Stops the work behind answers (what waits is dropped, what runs is
    /// cancelled and awaited), stops the downloader (work still waiting
    /// fails as cancelled), empties the memory tier and closes the store
    /// (writing batched access times and counters).
    public func close() async throws(ArtCacheError) {
        await background.close()
        downloader.shutdown()
        memory.removeAll()
        do {
            try await store.close()
        } catch {
            throw ArtCacheError(any: error, context: "cannot close the cache")
        }
    }

    /// Hands a flight whose requesters all left to `background`, as an
    /// `orphaned_flight` job that waits for it to end (its result is stored
    /// by the flight itself): within the scheduler's bounds; dropped past
    /// them, cancelled at close, the flight is abandoned (cancelled unless a
    /// new requester joined it). One job per flight: the coalescer offers a
    /// flight once while a job holds it, and the job is named by the flight
    /// (not only its key), so a job still held by an earlier flight of the
    /// same key is no `.duplicate` for this one (issue 58: declining then
    /// cancelled the flight).
    static func adopter<Key: Hashable & Sendable, Value: Sendable>(_ background: BackgroundScheduler) -> Coalescer<Key, Value>.Adopter {
        { key, flight in
            let job = BackgroundJobKey(.orphanedFlight, key: "\(key) \(flight.id)")
            let outcome = background.submit(job, priority: .veryLow, onDrop: flight.abandon) { await flight.finish() }
            return outcome == .queued
        }
    }

    // MARK: Requests

    /// The image for `request`: original or thumbnail, from the fastest tier
    /// that has it. Cancelling the calling task cancels this request.
    public func image(_ request: ImageRequest) async throws(ArtCacheError) -> ImageResponse {
        do {
            return try await load(request, priority: PriorityHandle(request.priority))
        } catch {
            throw ArtCacheError(any: error, context: request.url)
        }
    }

    /// A task for `request`, started now: its priority can be raised or
    /// lowered while it waits, and it can be cancelled.
    public func task(_ request: ImageRequest) -> ImageTask {
        ImageTask(request: request, pipeline: self)
    }

    /// The image for `request` if the memory tier has it: synchronous, never
    /// suspends, never touches disk or network (for a cell that can show a
    /// hit right away).
    public func cachedImage(for request: ImageRequest) -> ImageResponse? {
        guard !request.options.contains(.reloadIgnoringCache), let resolved = try? resolve(request) else { return nil }
        return memory.image(forKey: resolved.memoryKey, freshAt: Date())?.with(source: .memory)
    }

    /// What a request names, once checked: the normalized URL and, for a
    /// thumbnail, the full variant spec.
    struct Resolved: Sendable {
        let url: NormalizedURL
        let spec: VariantSpec?
        let cacheKey: CacheKey
        /// `cacheKey.hex`, made once (resolved requests are memoized: a
        /// memory hit reads it without writing 64 characters).
        let memoryKey: String

        init(url: NormalizedURL, spec: VariantSpec?) {
            self.url = url
            self.spec = spec
            cacheKey = spec.map { CacheKey(parent: url.key, spec: $0.canonical) } ?? url.key
            memoryKey = cacheKey.hex
        }
    }

    func resolve(_ request: ImageRequest) throws(ArtCacheError) -> Resolved {
        try resolvedRequests.value(for: request) { () throws(ArtCacheError) in try resolveUncached(request) }
    }

    private func resolveUncached(_ request: ImageRequest) throws(ArtCacheError) -> Resolved {
        let url = try NormalizedURL(request.url)
        guard let size = request.size else { return Resolved(url: url, spec: nil) }
        let settings = configuration.thumbnails
        guard size.width >= 1, size.height >= 1 else {
            throw ArtCacheError(.invalidRequest, "\(request.url): size \(size) must be at least 1x1")
        }
        guard size.width <= settings.maxOutput, size.height <= settings.maxOutput else {
            throw ArtCacheError(.tooLarge, "\(request.url): size \(size) is larger than thumbnails.max_output (\(settings.maxOutput))")
        }
        let quality = request.quality ?? settings.quality
        guard (1...100).contains(quality) else {
            throw ArtCacheError(.invalidRequest, "\(request.url): quality \(quality) must be from 1 to 100")
        }
        let spec = VariantSpec(width: size.width, height: size.height, fit: request.fit ?? settings.fit,
                               format: request.format ?? settings.format, quality: quality, background: settings.background)
        return Resolved(url: url, spec: spec)
    }

    /// One request through the tiers, with a priority that may change.
    /// A memory hit is served only while its original is fresh; an expired
    /// one goes to the disk tier, which revalidates. The request counts once
    /// in the cache's `hits` / `misses` when it reaches the disk tier (a hit
    /// when the disk answered it as stored).
    package func load(_ request: ImageRequest, priority: PriorityHandle) async throws(ArtCacheError) -> ImageResponse {
        var reachedDisk = false
        do {
            let resolved = try resolve(request)
            let reload = request.options.contains(.reloadIgnoringCache)
            if !reload, let hit = memory.image(forKey: resolved.memoryKey, freshAt: Date()) { return hit.with(source: .memory) }
            // An answer someone waits for: format upgrades wait until none is left.
            if !priority.background { background.foregroundBegan() }
            defer { if !priority.background { background.foregroundEnded() } }
            let mode = FetchMode(request.options)
            reachedDisk = mode != .reload
            let response: ImageResponse
            if let spec = resolved.spec {
                response = try await variantResponse(resolved.url, spec: spec, mode: mode, animated: request.animatedFormat,
                                                     priority: priority)
            } else {
                response = try await originalResponse(resolved.url, mode: mode, priority: priority)
            }
            if reachedDisk { count(response) }
            // (Under its own key: an animated source's answer is another variant than the one asked for.)
            if let key = response.cacheKey { memory.store(response, forKey: key == resolved.cacheKey ? resolved.memoryKey : key.hex) }
            return response
        } catch {
            if reachedDisk, !(error is CancellationError), (error as? ArtCacheError)?.code != .cancelled {
                store.recordRequest(hit: false)
            }
            let failure = ArtCacheError(any: error, context: request.url)
            guard request.options.contains(.placeholderOnFailure), failure.code != .cancelled else { throw failure }
            logger.debug("placeholder", metadata: ["url": "\(request.url)", "reason": "\(failure.reason)"])
            return try await placeholder(for: request, error: failure)
        }
    }
}

extension ImagePipeline {
    /// Counts one request answered past the memory tier in the cache's
    /// `hits` / `misses`: a hit when the disk answered it as stored (fresh or stale).
    func count(_ response: ImageResponse) {
        store.recordRequest(hit: (response.source == .disk || response.source == .stale) && !response.rendered)
    }
}

/// How a request may use the tiers.
enum FetchMode: Sendable, Hashable {
    case normal
    case cacheOnly
    case reload

    init(_ options: ImageRequest.Options) {
        self = options.contains(.cacheOnly) ? .cacheOnly : options.contains(.reloadIgnoringCache) ? .reload : .normal
    }

}
