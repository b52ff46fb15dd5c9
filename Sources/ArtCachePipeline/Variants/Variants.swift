import ArtCacheCore
import ArtCacheRender
import ArtCacheStore
import Foundation

/// How a variant was obtained.
struct VariantOutcome: Sendable {
    /// Where the bytes came from: `.disk` (stored, its original fresh or
    /// confirmed), `.revalidated` (stored, its original confirmed by the
    /// origin now), `.network` (rendered from an original downloaded now).
    var source: ImageResponse.Source
    /// Rendered for this request (not found in the cache).
    let rendered: Bool
    /// The variant's index row (nil when its original is `no-store`).
    let entry: CacheEntry?
    let data: Data
    let contentType: String
    let width: Int
    let height: Int
    /// When the original it shows stops being fresh (nil: no expiry).
    let freshUntil: Date?
    /// Its original's row, as read or stored for this request.
    var parent: CacheEntry?
    /// Why a WebP of an animated source is a still (rendered now only).
    var still: String?
    /// Why it is answered but not kept (nil: kept).
    var notKept: ImageResponse.NotKept?
}

/// Variants: one render per variant key at a time (a flight, coalesced),
/// from the stored variant while its original is fresh, else from the
/// original (``Originals``), from another node's render (``TierLink``), or
/// rendered here and stored; and the originals' intrinsics their renders
/// give. Owns the render flights and the intrinsics memo.
final class Variants: PipelinePart {
    let context: PipelineContext
    let originals: Originals
    let tier: TierLink
    let facts: SourceFacts
    /// Renders of variants, one per key; one whose requesters all left is
    /// finished by the background scheduler (`orphaned_flight`).
    let flights: Coalescer<VariantFlight, VariantOutcome>
    /// Originals whose intrinsics this process tried (Variants+Intrinsics).
    /// Bounded (``intrinsicsMemoLimit``; emptied when full).
    let intrinsicsAttempts = BoundedMemo<String, Bool>(capacity: Variants.intrinsicsMemoLimit)
    static let intrinsicsMemoLimit = 65_536

    init(context: PipelineContext, originals: Originals, tier: TierLink, facts: SourceFacts) {
        self.context = context
        self.originals = originals
        self.tier = tier
        self.facts = facts
        flights = Coalescer(adopt: ImagePipeline.adopter(context.background))
    }

    /// Renders in flight now (tests).
    var inFlight: Int { flights.inFlight }
    /// Requesters that joined a render (tests).
    var joins: Watched<Int> { flights.joins }
}

extension Variants {
    /// The variant `spec` of `url`: from the cache while its original is
    /// fresh, else rendered from the original (downloaded first when
    /// missing). A variant is valid exactly while its original is: a stored
    /// variant of an expired original has the original revalidated first
    /// (one flight per URL); a 304 keeps the variant, new bytes replace it.
    /// Concurrent requests for one variant share one render, at the highest
    /// priority of their callers.
    ///
    /// `behind`: a miss returns once rendered; its original and variant are
    /// committed behind it (``CacheStore/putBehind(url:data:contentType:declaredType:repaired:validators:now:)``).
    /// `animated`: the format an animated source is made in instead (the
    /// variant of that spec is the outcome; ImagePipeline+Animation).
    func variant(_ url: NormalizedURL, spec: VariantSpec, mode: FetchMode = .normal, behind: Bool = false,
                 animated: VariantSpec.Format? = nil, priority: PriorityHandle) async throws -> VariantOutcome {
        let canonical = spec.canonical
        let key = CacheKey(parent: url.key, spec: canonical)
        return try await flights.run(key: VariantFlight(key: key, mode: mode), priority: priority) { [self] priority in
            var original: FetchOutcome?
            if mode != .reload, let hit = try await store.lookup(key: key, counting: false) {
                var parent = try await store.entry(forKey: url.key)
                if let stored = parent { parent = await originals.freshness.dated(stored) }
                // (A variant rendered from other bytes than its original's can
                // only be seen while the new original is still written behind.)
                if let parent, parent.isFresh(at: Date()) || mode == .cacheOnly,
                   hit.entry.sourceSHA256 == nil || hit.entry.sourceSHA256 == parent.sha256 {
                    // A stored variant of another format than an animated source is
                    // answered in (a still: an explicit `f=`): the index says which.
                    if animated != nil, let moved = SourceFacts.animatedSpec(
                        spec, animated: await facts.isAnimated(url, original: parent) == true, as: animated) {
                        return try await variant(url, spec: moved, mode: mode, behind: behind, priority: priority)
                    }
                    return VariantOutcome(source: .disk, rendered: false, entry: hit.entry, data: hit.data,
                                          contentType: hit.entry.contentType, width: hit.entry.width ?? 0,
                                          height: hit.entry.height ?? 0, freshUntil: parent.expiresAt, parent: parent,
                                          still: Self.stillReason(hit.entry, hit.data, of: parent))
                }
                // Its original expired: answered stale (within its windows) or
                // revalidated first; a 304 keeps this variant, new bytes replace it.
                let confirmed = try await originals.original(url, mode: mode, behind: behind, pixels: spec.longerSide, priority: priority)
                if let entry = confirmed.entry, entry.sha256 == hit.entry.sourceSHA256 {
                    let source: ImageResponse.Source = switch confirmed.source {
                    case .revalidated: .revalidated
                    case .stale: .stale
                    default: .disk
                    }
                    return VariantOutcome(source: source, rendered: false,
                                          entry: hit.entry, data: hit.data, contentType: hit.entry.contentType,
                                          width: hit.entry.width ?? 0, height: hit.entry.height ?? 0,
                                          freshUntil: entry.expiresAt, parent: entry,
                                          still: Self.stillReason(hit.entry, hit.data, of: entry))
                }
                original = confirmed  // new bytes: render from them
            }
            let source: FetchOutcome
            if let original {
                source = original
            } else {
                source = try await originals.original(url, mode: mode, behind: behind, pixels: spec.longerSide, priority: priority)
            }
            if animated != nil, let moved = SourceFacts.animatedSpec(spec, animated: facts.noteAnimation(of: url, source.data), as: animated) {
                // The original is stored (or pending behind) now: the other variant reads it from there.
                var other = try await variant(url, spec: moved, mode: mode == .cacheOnly ? .cacheOnly : .normal, behind: behind,
                                              priority: priority)
                if other.rendered { other.source = Self.variantSource(of: source.source) }  // how this answer's original came
                return other
            }
            var rendered: RenderedImage
            var intrinsics: Intrinsics?
            let shared = try await tier.variantFromTier2(key, of: source, priority: priority)
            if let shared {
                rendered = shared
            } else if let parent = source.entry, claimIntrinsics(parent) {
                let made = try await timed(.render) {
                    try await renderer.renderWithIntrinsics(source.data, specs: [spec], priority: priority)
                }
                (rendered, intrinsics) = (made.images[0], made.intrinsics)
            } else {
                rendered = try await timed(.render) { try await renderer.render(source.data, spec: spec, priority: priority) }
            }
            var entry: CacheEntry?
            // (Rendered from an original smaller than this size needs, the
            // larger rendition out of reach for now: answered, not stored.)
            if let parent = source.entry, !source.undersized {
                entry = try await storeVariant(rendered, spec: canonical, of: parent, url: url, behind: behind,
                                               intrinsics: intrinsics)
                if shared == nil { tier.writeVariantToTier2Behind(key, rendered, of: parent) }
            }
            let from = Self.variantSource(of: source.source)
            return VariantOutcome(source: shared == nil ? from : .tier2, rendered: shared == nil, entry: entry, data: rendered.data,
                                  contentType: rendered.contentType, width: rendered.width, height: rendered.height,
                                  freshUntil: source.entry?.expiresAt, parent: source.entry, still: rendered.still?.rawValue,
                                  notKept: source.notKept)
        }
    }

    /// Why a stored WebP variant of an animated original (its row says
    /// frames) is one frame: `frames` (made past the frame limits); nil
    /// for anything else. Read from the bytes' own header (a WebP without
    /// `ANIM`), so a disk hit says it as the render did.
    static func stillReason(_ variant: CacheEntry, _ data: Data, of original: CacheEntry) -> String? {
        guard let frames = original.frames, frames > 1, variant.contentType == "image/webp",
              !Sniffer.sniff(data).isAnimated else { return nil }
        return RenderedImage.StillReason.frames.rawValue
    }

    /// The source a variant rendered from an original obtained so is answered with.
    static func variantSource(of original: FetchOutcome.Source) -> ImageResponse.Source {
        switch original {
        case .cached: .disk
        case .revalidated: .revalidated
        case .stale: .stale
        case .downloaded, .uncacheable: .network
        case .tier2: .tier2
        }
    }

    /// A variant as a response.
    func variantResponse(_ url: NormalizedURL, spec: VariantSpec, mode: FetchMode, animated: VariantSpec.Format? = nil,
                         priority: PriorityHandle) async throws -> ImageResponse {
        let outcome = try await variant(url, spec: spec, mode: mode, behind: true, animated: animated, priority: priority)
        if let parent = outcome.parent { computeIntrinsicsBehind(of: parent) }
        var response = ImageResponse(data: outcome.data, contentType: outcome.contentType,
                                     width: outcome.width, height: outcome.height, source: outcome.source,
                                     cacheKey: outcome.entry?.cacheKey, entry: outcome.entry, rendered: outcome.rendered,
                                     freshUntil: outcome.freshUntil)
            .with(info: outcome.parent.flatMap(ImageInfo.init(entry:)))
            .with(original: outcome.parent)
        response.still = outcome.still
        response.notKept = outcome.notKept
        return response
    }
}

extension Variants {
    /// The variants `specs` of an original just fetched, as prefetch makes
    /// them: those not cached yet are rendered from one decode (at the scale
    /// the largest needs; the smaller ones are resized from it) and stored.
    /// One result per spec: true when rendered now, false when already cached.
    func makeVariants(_ url: NormalizedURL, specs: [VariantSpec], from original: FetchOutcome,
                      priority: PriorityHandle) async -> [Result<Bool, ArtCacheError>] {
        // (An original smaller than these sizes need, its larger rendition
        // out of reach for now: nothing is made from it to be kept.)
        guard let parent = original.entry, !original.undersized else { return [] }
        var missing: [Int] = []
        for (index, spec) in specs.enumerated() {
            do {
                if try await store.entry(forKey: CacheKey(parent: url.key, spec: spec.canonical)) == nil { missing.append(index) }
            } catch {
                missing.append(index)  // unreadable: render it
            }
        }
        var results = [Result<Bool, ArtCacheError>](repeating: .success(false), count: specs.count)
        // Renders that failed for good from these bytes are not tried again.
        for index in missing {
            if let remembered = await rememberedRenderFailure(url, spec: specs[index], parent: parent) {
                results[index] = .failure(remembered)
            }
        }
        missing.removeAll { if case .failure = results[$0] { true } else { false } }
        guard !missing.isEmpty else { return results }
        let rendered: [RenderedImage]
        var intrinsics: Intrinsics?
        do {
            let wanted = missing.map { specs[$0] }
            if claimIntrinsics(parent) {
                let made = try await timed(.render) {
                    try await renderer.renderWithIntrinsics(original.data, specs: wanted, priority: priority)
                }
                (rendered, intrinsics) = (made.images, made.intrinsics)
            } else {
                rendered = try await timed(.render) { try await renderer.render(original.data, specs: wanted, priority: priority) }
            }
        } catch {
            await rememberRenderFailure(url, specs: missing.map { specs[$0] }, error)
            let failure = ArtCacheError(any: error, context: url.string)
            for index in missing { results[index] = .failure(failure) }
            return results
        }
        for (number, (index, image)) in zip(missing, rendered).enumerated() {
            do {
                // The original's intrinsics ride on its first variant's write.
                _ = try await storeVariant(image, spec: specs[index].canonical, of: parent, url: url,
                                           intrinsics: number == 0 ? intrinsics : nil)
                tier.writeVariantToTier2Behind(CacheKey(parent: url.key, spec: specs[index].canonical), image, of: parent)
                results[index] = .success(true)
            } catch {
                results[index] = .failure(ArtCacheError(any: error, context: url.string))
            }
        }
        return results
    }

    /// Stores a render of `parent`'s bytes. When the original was evicted or
    /// replaced meanwhile, nothing is stored (nil) and the render is still
    /// the caller's to hand out; other store errors are thrown.
    /// `intrinsics`: the original's, from the render's decode, recorded by the same write.
    private func storeVariant(_ image: RenderedImage, spec: String, of parent: CacheEntry, url: NormalizedURL,
                              behind: Bool = false, intrinsics: Intrinsics? = nil) async throws -> CacheEntry? {
        let intrinsics = intrinsics.map(OriginalIntrinsics.init)
        do {
            if behind {
                return try await store.putVariantBehind(parent: parent, spec: spec, data: image.data, contentType: image.contentType,
                                                        width: image.width, height: image.height, intrinsics: intrinsics)
            }
            return try await store.putVariant(parent: parent.cacheKey, spec: spec, data: image.data, contentType: image.contentType,
                                              width: image.width, height: image.height, sourceSHA256: parent.sha256,
                                              intrinsics: intrinsics)
        } catch let error as StoreError where error.code == .missingParent || error.code == .staleSource {
            logger.debug("variant not stored", metadata: ["url": "\(url)", "reason": "\(error.code.rawValue)"])
            return nil
        }
    }
}

extension VariantSpec {
    /// The source size a provider profile is asked for: the output's longer side.
    var longerSide: Int { Swift.max(width, height) }
}
