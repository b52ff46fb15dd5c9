import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import ArtCacheTier
import Foundation

/// A local miss reads the shared second tier (`[tier2]`) before the origin.
extension Originals {
    /// The original of `url` from the tier, stored here as the writer stored
    /// it (type, validators, expiry, placeholder); nil when the tier has
    /// none, fails, is slow or is off: the caller asks the origin. An
    /// expired one is answered as an expired stored original is (stale
    /// within its window, else revalidated with its validators).
    func fromTier2(_ url: NormalizedURL, behind: Bool, staleOK: Bool, now: Date,
                   priority: PriorityHandle) async throws -> FetchOutcome? {
        guard let tier2 = tier.tier2, let (record, data) = try await tier2.read(url.key, priority: priority) else { return nil }
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
            return try await freshness.answerExpired(CachedImage(entry: entry, data: data), url: url, now: now, behind: behind,
                                           staleOK: staleOK, priority: priority)
        }
        return FetchOutcome(source: .tier2, entry: entry, data: data, repaired: record.repaired, downloadedBytes: 0)
    }

}
