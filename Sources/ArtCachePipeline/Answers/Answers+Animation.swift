import ArtCacheCore
import ArtCacheRender
import Foundation

/// Animated sources under negotiation: the request an animated source is
/// answered with (SourceFacts says whether it is).
extension Answers {
    /// What this process knows of `request`'s source without asking the
    /// index: animated (`true`), not (`false`), or not known (nil, also for
    /// a request with no animated format, for which it does not matter).
    func memoizedAnimation(_ request: ImageRequest) -> Bool? {
        guard request.animatedFormat != nil, request.size != nil, let resolved = try? requests.resolve(request) else { return nil }
        return facts.animatedSources[resolved.url.key.hex]
    }

    /// `request` in its animated format (itself when it asks for that
    /// format already); nil when it has none.
    static func animatedRequest(_ request: ImageRequest) -> ImageRequest? {
        guard let format = request.animatedFormat, request.size != nil else { return nil }
        var moved = request
        moved.format = format
        return moved
    }

    /// The request that answers `request` when this process has seen its
    /// source animated (the memo only: a memory hit never reads the index;
    /// ``cachedNegotiatedImage(_:better:)`` leaves a source not known there
    /// to the async path).
    func knownAnimatedRequest(_ request: ImageRequest) -> ImageRequest? {
        memoizedAnimation(request) == true ? Self.animatedRequest(request) : nil
    }

    /// ``knownAnimatedRequest(_:)`` from the index when the memo does not know.
    func animatedRequest(of request: ImageRequest) async -> ImageRequest? {
        guard let moved = Self.animatedRequest(request), let resolved = try? requests.resolve(request) else { return nil }
        return await facts.isAnimated(resolved.url) == true ? moved : nil
    }
}
