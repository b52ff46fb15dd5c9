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
/// It is a facade over parts that own their state (docs/architecture.md):
/// ``Requests`` (resolving, the memory tier, placeholders), ``Originals``
/// (loads, leases, provider profiles), ``Freshness`` (RFC 9111:
/// revalidation, stale answers, remembered failures), ``Variants``
/// (renders, their store, intrinsics), ``Answers`` (negotiation, the one
/// decision of an answer's lifetime, format upgrades), ``SourceFacts``
/// (what the index says of a source: animated) and ``TierLink`` (the second
/// tier). They share one ``PipelineContext``.
public final class ImagePipeline: Sendable {
    public let configuration: Configuration
    let context: PipelineContext
    let requests: Requests
    let originals: Originals
    let freshness: Freshness
    let variants: Variants
    let answers: Answers
    let facts: SourceFacts
    let tier: TierLink

    var store: CacheStore { context.store }
    var downloader: Downloader { context.downloader }
    var renderer: Renderer { context.renderer }
    var memory: MemoryCache { context.memory }
    var logger: Logger { context.logger }
    /// The one owner of work behind answers: revalidations, placeholders,
    /// warm-ups, and the store's fold and reclaimer (docs/background.md). Closed first by ``close()``.
    package var background: BackgroundScheduler { context.background }
    /// The shared second tier, when `[tier2] endpoint` is set.
    package var tier2: Tier2? { tier.tier2 }

    init(configuration: Configuration, store: CacheStore, downloader: Downloader, logger: Logger) {
        self.configuration = configuration
        let context = PipelineContext(configuration: configuration, store: store, downloader: downloader,
                                      renderer: Renderer(settings: configuration.thumbnails),
                                      memory: MemoryCache(settings: configuration.memory), background: store.background,
                                      logger: logger)
        self.context = context
        tier = TierLink(context: context, tier2: configuration.tier2.isEnabled
                        ? Tier2(settings: configuration.tier2, downloader: downloader, logger: logger) : nil)
        freshness = Freshness(context: context, tier: tier)
        originals = Originals(context: context, freshness: freshness, tier: tier)
        facts = SourceFacts(context: context)
        variants = Variants(context: context, originals: originals, tier: tier, facts: facts)
        requests = Requests(context: context, originals: originals, variants: variants)
        answers = Answers(context: context, requests: requests, facts: facts)
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
        try await requests.image(request)
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
        requests.cachedImage(for: request)
    }
}
