import ArtCacheCore
import ArtCacheRender
import Foundation

/// Animated sources under negotiation (issue 52 §1): the format policy picks
/// a request's format from `Accept` and the size before the source is
/// known; an animated GIF or WebP is answered instead in the animated
/// format the client takes (``ImageRequest/animatedFormat``: WebP), whatever
/// the cold format would have been (AVIF from 300 px for Chrome), with no
/// upgrade behind it (an AVIF of it would be a still). Whether a source is
/// animated is read from the original's bytes when a variant is rendered
/// from them (``Sniffer``: 2+ GIF frames, a WebP `ANIM`), and remembered by
/// URL (``animatedSources``): a later request goes to the animated variant
/// directly, from memory too.
extension ImagePipeline {
    /// Notes whether the original of `url` is animated, from its bytes.
    func noteAnimation(of url: NormalizedURL, _ data: Data) -> Bool {
        let animated = Sniffer.sniff(data).isAnimated
        animatedSources.store(animated, for: url.key.hex)
        return animated
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

    /// The request that answers `request` when this process has seen its
    /// source animated: `request` in its animated format (itself when it
    /// asks for that format already); nil when not known animated, or not a
    /// request with an animated format (a memory hit never fetches: unknown
    /// is no).
    func knownAnimatedRequest(_ request: ImageRequest) -> ImageRequest? {
        guard let format = request.animatedFormat, request.size != nil, let resolved = try? resolve(request),
              animatedSources[resolved.url.key.hex] == true else { return nil }
        var moved = request
        moved.format = format
        return moved
    }
}
