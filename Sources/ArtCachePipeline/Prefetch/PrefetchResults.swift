import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

/// The outcome of prefetching a list of URLs. Encoded with snake_case keys:
/// this is the stable `prefetch --json` shape documented in docs/commands.md.
public struct PrefetchSummary: Sendable, Codable, Equatable {
    public var requested = 0
    /// Fresh in the cache already.
    public var cached = 0
    public var revalidated = 0
    public var downloaded = 0
    /// Downloaded with a wrong Content-Type that was corrected.
    public var repaired = 0
    /// Answered with something that is not an image (HTML, JSON, empty...).
    public var refused = 0
    /// Downloaded but not kept (`Cache-Control: no-store`).
    public var uncacheable = 0
    /// Read from the shared second tier (`[tier2]`): no origin request.
    public var fromTier2 = 0
    /// Failed for any other reason; `failures` has them by reason.
    public var failed = 0
    public var failures: [String: Int] = [:]
    /// Bytes downloaded.
    public var bytes: Int64 = 0
    public var seconds: Double = 0
    /// Thumbnail variants rendered (configured sizes not already cached).
    public var variants = 0
    /// Variants that could not be rendered, by reason (`render_too_large`, ...).
    public var renderFailures: [String: Int] = [:]
    /// Each of them, in result order (`failed_renders` in `prefetch --json`).
    package var failedRenders: [FailedRender] = []

    public var succeeded: Bool { failed == 0 && refused == 0 }
}

/// One URL's result, in result-set order.
public struct PrefetchItem: Sendable {
    public let url: String
    public let outcome: Result<OriginalSource, ArtCacheError>
    package let entry: CacheEntry?
    /// Bytes downloaded for this item.
    public let bytes: Int
    /// The declared Content-Type was wrong and was corrected.
    public let repaired: Bool
    /// Thumbnails rendered now for this item.
    public let variantsMade: Int
    /// Thumbnails that could not be rendered, by reason (`render_decode`, ...).
    public let renderFailures: [String: Int]
    /// Each of them, in the order of the sizes asked for.
    package var failedRenders: [FailedRender] = []
}

/// A thumbnail that could not be rendered: which source, which size, why.
package struct FailedRender: Sendable, Codable, Equatable {
    package let url: String
    /// `WIDTHxHEIGHT`.
    package let size: String
    /// `render_decode`, `render_too_large`...
    package let reason: String
    package let message: String

    package init(url: String, size: String, reason: String, message: String) {
        self.url = url
        self.size = size
        self.reason = reason
        self.message = message
    }
}

/// Progress while prefetching a batch.
public struct PrefetchProgress: Sendable {
    public let done: Int
    public let total: Int
    public let bytes: Int64
    public let failed: Int
    public let elapsed: TimeInterval
}

/// What a batch reports while it runs: one event per finished item.
public enum PrefetchEvent: Sendable {
    /// `item` (at `index` in the batch) is done; `progress` counts the batch so far.
    case item(index: Int, item: PrefetchItem, progress: PrefetchProgress)
}
