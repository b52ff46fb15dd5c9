import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import ArtCacheTier
import Foundation

/// The shared second tier (`[tier2]`), as the pipeline's parts use it: an
/// original downloaded here and a thumbnail rendered here are written to it
/// behind their answers; a thumbnail another node rendered is read in place
/// of a render. (A local miss reads originals from it: ``Originals``.) Owns
/// the tier's handle.
final class TierLink: PipelinePart {
    let context: PipelineContext
    /// The shared second tier, when `[tier2] endpoint` is set.
    let tier2: Tier2?

    init(context: PipelineContext, tier2: Tier2?) {
        self.context = context
        self.tier2 = tier2
    }
}

extension TierLink {
    /// Writes a downloaded original and its record to the tier, as a job of
    /// the background scheduler (bounded by its queue and bytes; dropped
    /// when full: the tier is a cache). Its placeholder goes along when this
    /// node has made it by then.
    func writeToTier2Behind(url: NormalizedURL, data: Data, sha256: String, contentType: String, declaredType: String?,
                            repaired: Bool, validators: HTTPValidators, now: Date) {
        guard let tier2 else { return }
        let record = Tier2Record(url: url.string, sha256: sha256, size: Int64(data.count), contentType: contentType,
                                 declaredType: declaredType, repaired: repaired, validators: validators, storedAt: now)
        let key = url.key
        background.submit(BackgroundJobKey(.tier2Write, key: key.hex, spec: sha256), priority: .veryLow,
                          bytes: data.count) { [store] in
            var record = record
            if let hit = try? await store.lookup(key: key, counting: false), hit.entry.sha256 == sha256,
               let thumbHash = hit.entry.thumbHash {
                (record.width, record.height, record.color) = (hit.entry.width, hit.entry.height, hit.entry.color)
                record.thumbHash = thumbHash.base64EncodedString()
            }
            try? await tier2.write(record, data: data, for: key, priority: PriorityHandle(.veryLow, background: true))
        }
    }

    /// A thumbnail another node rendered from these bytes (`[tier2]
    /// variants`), in place of a render; not asked for an original
    /// downloaded just now (no other node can have rendered it yet).
    func variantFromTier2(_ key: CacheKey, of original: FetchOutcome, priority: PriorityHandle) async throws -> RenderedImage? {
        guard let tier2, original.source != .downloaded, let parent = original.entry,
              let found = try await tier2.readVariant(key, sourceSHA256: parent.sha256, priority: priority) else { return nil }
        return RenderedImage(stored: found.data, contentType: found.contentType, width: found.width, height: found.height)
    }

    /// Writes a thumbnail rendered here to the tier, behind its answer (`[tier2] variants`).
    func writeVariantToTier2Behind(_ key: CacheKey, _ image: RenderedImage, of parent: CacheEntry) {
        guard let tier2, tier2.settings.variants else { return }
        let variant = Tier2Variant(data: image.data, contentType: image.contentType, width: image.width, height: image.height,
                                   sourceSHA256: parent.sha256)
        background.submit(BackgroundJobKey(.tier2Write, key: key.hex, spec: parent.sha256), priority: .veryLow,
                          bytes: image.data.count) {
            try? await tier2.writeVariant(key, variant, priority: PriorityHandle(.veryLow, background: true))
        }
    }
}
