import ArtCacheCore
import ArtCacheRender
import ArtCacheStore
import Foundation

/// Animated sources under negotiation (issue 52 §1): the format policy picks
/// a request's format from `Accept` and the size before the source is
/// known; an animated GIF or WebP is answered instead in the animated
/// format the client takes (``ImageRequest/animatedFormat``: WebP), whatever
/// the cold format would have been (AVIF from 300 px for Chrome), with no
/// upgrade behind it (an AVIF of it would be a still).
///
/// Whether a source is animated is a fact of the index (issue 58): the
/// original's row records its `frames` with its placeholder, and its bytes
/// say it before that (``Sniffer``: 2+ GIF frames, a WebP `ANIM`).
/// ``animatedSources`` is only a cache of those, by URL: after a restart or
/// once it was emptied, the async path reads the row (or the stored bytes)
/// again before it decides, and a memory hit whose source is not known
/// there goes the async way once.
/// Facts about sources that answers depend on, read from the index:
/// whether an original is animated (its row's `frames`, else its stored
/// bytes). Owns ``animatedSources``, only a cache of those facts.
final class SourceFacts: PipelinePart {
    let context: PipelineContext
    /// Whether an original is animated (a GIF or WebP of 2+ frames), by its
    /// URL's key. Bounded by `[memory]` memo entries; emptied when full.
    let animatedSources: BoundedMemo<String, Bool>

    init(context: PipelineContext) {
        self.context = context
        animatedSources = BoundedMemo(capacity: max(1, context.configuration.memory.memoEntries))
    }
}

extension SourceFacts {
    /// Notes whether the original of `url` is animated, from its bytes.
    func noteAnimation(of url: NormalizedURL, _ data: Data) -> Bool {
        let animated = Sniffer.sniff(data).isAnimated
        animatedSources.store(animated, for: url.key.hex)
        return animated
    }

    /// Whether the stored original of `url` is animated: the memo, else its
    /// index row's frames, else its stored bytes (then kept in the memo);
    /// nil when no original is stored (nothing is known yet).
    func isAnimated(_ url: NormalizedURL) async -> Bool? {
        if let known = animatedSources[url.key.hex] { return known }
        return await isAnimated(url, original: try? await store.entry(forKey: url.key))
    }

    /// ``isAnimated(_:)`` with the original's row in hand (`original`; nil: none stored).
    func isAnimated(_ url: NormalizedURL, original: CacheEntry?) async -> Bool? {
        if let known = animatedSources[url.key.hex] { return known }
        guard let original else { return nil }
        if let frames = original.frames {
            animatedSources.store(frames > 1, for: url.key.hex)
            return frames > 1
        }
        // Not measured yet (its placeholder is computed behind): the bytes say it.
        guard let stored = try? await store.lookup(key: url.key, counting: false) else { return nil }
        return noteAnimation(of: url, stored.data)
    }

    /// The spec an answer to `spec` is made as, once its source is known
    /// to be `animated`: the request's ``ImageRequest/animatedFormat``
    /// instead of the negotiated format; nil when nothing changes.
    static func animatedSpec(_ spec: VariantSpec, animated: Bool, as format: VariantSpec.Format?) -> VariantSpec? {
        guard animated, let format, spec.format != format else { return nil }
        var moved = spec
        moved.format = format
        return moved
    }
}
