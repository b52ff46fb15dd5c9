import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

/// A request through the tiers: resolved once (URL normalized, key hashed,
/// memoized), then the memory tier, then a variant (``Variants``) or an
/// original (``Originals``); a failure asked to be answered by a placeholder
/// gets one. Owns the resolved-requests memo and the placeholders made.
final class Requests: PipelinePart {
    let context: PipelineContext
    let originals: Originals
    let variants: Variants
    /// Requests already resolved (URL normalized, key hashed): a hot set of
    /// memory hits skips that work. Bounded; emptied when full.
    let resolvedRequests: BoundedMemo<ImageRequest, Resolved>
    /// Placeholders made, by size and format (bounded by
    /// ``placeholderMemoLimit``; emptied when full: sizes come from requests).
    let placeholders = BoundedMemo<String, ImageResponse>(capacity: Requests.placeholderMemoLimit)
    static let placeholderMemoLimit = 64

    init(context: PipelineContext, originals: Originals, variants: Variants) {
        self.context = context
        self.originals = originals
        self.variants = variants
        resolvedRequests = BoundedMemo(capacity: max(1, context.configuration.memory.memoEntries))
    }

    /// The image for `request` (its errors typed, with the URL as context).
    func image(_ request: ImageRequest) async throws(ArtCacheError) -> ImageResponse {
        do {
            return try await load(request, priority: PriorityHandle(request.priority))
        } catch {
            throw ArtCacheError(any: error, context: request.url)
        }
    }

    /// The image for `request` if the memory tier has it (never suspends).
    func cachedImage(for request: ImageRequest) -> ImageResponse? {
        guard !request.options.contains(.reloadIgnoringCache), let resolved = try? resolve(request) else { return nil }
        return memory.image(forKey: resolved.memoryKey, freshAt: Date())?.with(source: .memory)
    }
}

extension Requests {
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
                response = try await variants.variantResponse(resolved.url, spec: spec, mode: mode, animated: request.animatedFormat,
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

extension Requests {
    /// An original as a response (dimensions read from its header).
    func originalResponse(_ url: NormalizedURL, mode: FetchMode, priority: PriorityHandle) async throws -> ImageResponse {
        let outcome = try await originals.original(url, mode: mode, behind: true, priority: priority)
        let source: ImageResponse.Source = switch outcome.source {
        case .cached: .disk
        case .revalidated: .revalidated
        case .stale: .stale
        case .downloaded, .uncacheable: .network
        case .tier2: .tier2
        }
        let (width, height) = try await originals.dimensions(of: outcome.data, priority: priority)
        if let entry = outcome.entry { variants.computeIntrinsicsBehind(of: entry) }
        var response = ImageResponse(data: outcome.data,
                                     contentType: outcome.entry?.contentType ?? Sniffer.sniff(outcome.data).mimeType,
                                     width: width, height: height, source: source, cacheKey: outcome.entry?.cacheKey,
                                     entry: outcome.entry, repaired: outcome.repaired, freshUntil: outcome.entry?.expiresAt)
            .with(info: outcome.entry.flatMap(ImageInfo.init(entry:)))
            .with(original: outcome.entry)
        response.notKept = outcome.notKept
        return response
    }

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
