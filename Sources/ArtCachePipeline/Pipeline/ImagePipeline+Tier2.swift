import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import ArtCacheTier
import Foundation

/// The shared second tier (`[tier2]`): a local miss reads it before the
/// origin; an original downloaded here is written to it behind its answer.
extension ImagePipeline {
    /// The original of `url` from the tier, stored here as the writer stored
    /// it (type, validators, expiry, placeholder); nil when the tier has
    /// none, fails, is slow or is off: the caller asks the origin. An
    /// expired one is answered as an expired stored original is (stale
    /// within its window, else revalidated with its validators).
    func fromTier2(_ url: NormalizedURL, behind: Bool, staleOK: Bool, now: Date,
                   priority: PriorityHandle) async throws -> FetchOutcome? {
        guard let tier2, let (record, data) = try await tier2.read(url.key, priority: priority) else { return nil }
        // A shared store: the bytes must be those the record names.
        let sha256 = try await CacheStore.hash(data)
        guard sha256 == record.sha256, record.url == url.string else {
            logger.warning("tier2: an object does not match its record; asking the origin", metadata: ["url": "\(url)"])
            return nil
        }
        var placeholder: OriginalIntrinsics?
        if let width = record.width, let height = record.height, let color = record.color,
           let hash = record.thumbHash.flatMap({ Data(base64Encoded: $0) }) {
            placeholder = OriginalIntrinsics(width: width, height: height, color: color, thumbHash: hash)
        }
        let fresh = record.validators.expiresAt.map { $0 > now } ?? false
        var entry = behind && fresh
            ? try await store.putBehind(url: url.string, data: data, contentType: record.contentType,
                                        declaredType: record.declaredType, repaired: record.repaired,
                                        validators: record.validators, fetched: nil, sha256: sha256, now: now)
            : try await store.put(url: url.string, data: data, contentType: record.contentType, declaredType: record.declaredType,
                                  repaired: record.repaired, validators: record.validators, fetched: nil, sha256: sha256, now: now)
        if let placeholder, try await store.setPlaceholder(key: entry.key, sha256: sha256, placeholder) {
            (entry.width, entry.height, entry.color, entry.thumbHash) = (placeholder.width, placeholder.height,
                                                                         placeholder.color, placeholder.thumbHash)
        }
        guard fresh else {
            return try await answerExpired(CachedImage(entry: entry, data: data), url: url, now: now, behind: behind,
                                           staleOK: staleOK, priority: priority)
        }
        return FetchOutcome(source: .tier2, entry: entry, data: data, repaired: record.repaired, downloadedBytes: 0)
    }

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
