import ArtCacheCore
import ArtCacheRender
import ArtCacheStore
import Foundation

/// Render failures remembered like failed downloads (`[download]
/// negative_ttl`), per source and spec (under the variant's key): a
/// thumbnail that could not be made from an original's bytes is not tried
/// again from the same bytes within that time, so the next prefetch does
/// not decode the image again. New bytes (a later download of the
/// original) are rendered again; `purge --failures` forgets them all.
extension Variants {
    /// The render of `spec` from `parent`'s bytes that failed for good and
    /// is remembered, as the error it failed with; nil when none is.
    func rememberedRenderFailure(_ url: NormalizedURL, spec: VariantSpec, parent: CacheEntry,
                                 now: Date = Date()) async -> ArtCacheError? {
        guard configuration.download.negativeTTL > 0 else { return nil }
        let answer: NegativeAnswer?
        do {
            answer = try await store.negatives.answer(forKey: CacheKey(parent: url.key, spec: spec.canonical), now: now)
        } catch {
            return nil  // unreadable: render it
        }
        guard let answer, answer.failedAt >= parent.createdAt, answer.reason.hasPrefix(RenderError.reasonPrefix),
              let code = RenderError.Code(rawValue: String(answer.reason.dropFirst(RenderError.reasonPrefix.count))) else {
            return nil
        }
        originals.freshness.counters.withLock { $0.negativeHits += 1 }
        let until = ISO8601DateFormatter().string(from: answer.until)
        return ArtCacheError(RenderError(code, "\(answer.message) (remembered until \(until); "
                                         + "`artcache purge --failures` forgets it)"))
    }

    /// Remembers that rendering `specs` from `url`'s original failed with
    /// `error`, when that is the image's own doing (unsupported, too large,
    /// corrupt, not encodable): not a render past `render_timeout` (a
    /// busy machine's as much as the image's), a cancellation or a full disk.
    /// A write that fails is logged: the render's error is what the caller gets.
    func rememberRenderFailure(_ url: NormalizedURL, specs: [VariantSpec], _ error: any Error) async {
        let ttl = configuration.download.negativeTTL
        guard ttl > 0, let render = (error as? RenderError) ?? ((error as? ArtCacheError)?.underlying as? RenderError),
              render.code != .timedOut else { return }
        do {
            for spec in specs {
                try await store.negatives.record(key: CacheKey(parent: url.key, spec: spec.canonical), url: url.string,
                                                 reason: render.reason, message: render.message, ttl: ttl)
            }
            originals.freshness.scheduleNegativeCleanup()
        } catch {
            logger.error("cannot record a failed render", metadata: ["url": "\(url)", "error": "\(error)"])
        }
    }
}
