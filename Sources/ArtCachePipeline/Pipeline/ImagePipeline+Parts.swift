import ArtCacheCore
import ArtCacheRender
import ArtCacheStore
import Foundation

/// The facade's doors into its parts, for the service, the CLI, the
/// prefetcher and manifests (in the package): each says which part answers.
extension ImagePipeline {
    // MARK: Answers (negotiation, lifetime, upgrades)

    /// The answer to a negotiated request (``Answers``).
    package func negotiatedImage(_ request: ImageRequest, better: VariantSpec.Format?) async throws(ArtCacheError) -> NegotiatedImage {
        try await answers.negotiatedImage(request, better: better)
    }

    /// A memory hit for a negotiated request (``Answers``), nil when the memory tier cannot answer it.
    package func cachedNegotiatedImage(_ request: ImageRequest, better: VariantSpec.Format?) -> NegotiatedImage? {
        answers.cachedNegotiatedImage(request, better: better)
    }

    /// Whether a final memory hit's ticket still answers its request (``Answers``).
    package func rehit(_ ticket: MemoryTicket, now: Date) -> Bool { answers.rehit(ticket, now: now) }

    /// Upgrades ended since the pipeline opened, by outcome (for /metrics).
    package var upgradeCounts: UpgradeCounts { answers.upgradeCounts }

    /// Returns once no format upgrade waits or runs (tests, benchmarks).
    package func waitForUpgrades() async { await answers.waitForUpgrades() }

    // MARK: Freshness

    /// The counters of revalidations and stale answers (for `/metrics`).
    package var freshnessCounters: FreshnessCounters { freshness.snapshot }

    /// Waits until no revalidation behind an answer waits or runs: a
    /// one-shot command (`get`, `thumb`) calls it before ``close()`` (which
    /// cancels them), so a stale answer it gave still refreshes the cache.
    package func waitForRevalidations() async { await freshness.waitForRevalidations() }

    // MARK: Originals, variants, intrinsics

    /// The size and placeholder of the image at `url` (fetched first when not
    /// cached, unless `options` has `.cacheOnly`). Computed now when the
    /// index does not hold them yet, and recorded.
    public func info(for url: String, priority: ImagePriority = .normal,
                     options: ImageRequest.Options = []) async throws(ArtCacheError) -> ImageInfo {
        try await variants.info(for: url, priority: priority, options: options)
    }

    /// Returns once no placeholder job waits or runs (tests, `verify --repair`).
    package func waitForIntrinsicsJobs() async { await variants.waitForIntrinsicsJobs() }

    /// Computes the missing intrinsics of every stored original (`verify --repair`).
    package func fillIntrinsics(batch: Int = 256) async throws(ArtCacheError) -> (computed: Int, failed: Int) {
        try await variants.fillIntrinsics(batch: batch)
    }

    func original(_ url: NormalizedURL, mode: FetchMode = .normal, behind: Bool = false, pixels: Int? = nil,
                  staleOK: Bool = true, priority: PriorityHandle) async throws -> FetchOutcome {
        try await originals.original(url, mode: mode, behind: behind, pixels: pixels, staleOK: staleOK, priority: priority)
    }

    func makeVariants(_ url: NormalizedURL, specs: [VariantSpec], from original: FetchOutcome,
                      priority: PriorityHandle) async -> [Result<Bool, ArtCacheError>] {
        await variants.makeVariants(url, specs: specs, from: original, priority: priority)
    }

    func computeIntrinsicsBehind(of entry: CacheEntry) { variants.computeIntrinsicsBehind(of: entry) }

    // MARK: Requests

    func resolve(_ request: ImageRequest) throws(ArtCacheError) -> Requests.Resolved { try requests.resolve(request) }

    package func load(_ request: ImageRequest, priority: PriorityHandle) async throws(ArtCacheError) -> ImageResponse {
        try await requests.load(request, priority: priority)
    }
}
