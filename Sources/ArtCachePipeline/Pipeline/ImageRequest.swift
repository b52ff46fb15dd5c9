import ArtCacheCore
import ArtCacheRender
import ArtCacheServiceGrammar
import ArtCacheStore
import Foundation

/// What a front asks the pipeline for: an image URL, and either the original
/// (`size == nil`) or a thumbnail of it, with a priority and options.
public struct ImageRequest: Sendable, Hashable {
    public typealias Priority = ImagePriority

    /// A thumbnail's bounding box in pixels.
    public typealias Size = ImageSize

    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Never touch the network: memory and disk only (rendering a variant
        /// from a cached original is allowed). A miss is `.notCached`.
        public static let cacheOnly = Options(rawValue: 1 << 0)
        /// Skip the memory and disk tiers and download again (the new bytes
        /// replace the stored ones).
        public static let reloadIgnoringCache = Options(rawValue: 1 << 1)
        /// On failure, answer with a placeholder of the requested size
        /// (source `.placeholder`, the error attached) instead of throwing.
        /// Cancellation still throws.
        public static let placeholderOnFailure = Options(rawValue: 1 << 2)
    }

    public var url: String
    /// nil: the original bytes; otherwise a thumbnail into this box.
    public var size: Size?
    /// nil: `[thumbnails] fit`.
    public var fit: VariantSpec.Fit?
    /// nil: `[thumbnails] format` (`auto` picks JPEG, or PNG for alpha).
    public var format: VariantSpec.Format?
    /// 1...100; nil: `[thumbnails] quality`.
    public var quality: Int?
    public var priority: Priority
    public var options: Options
    /// The format an animated source is answered in instead of `format`
    /// (a negotiated request from a client that takes WebP: `.webp`); nil:
    /// `format`, its first frame. Set by the service's negotiation.
    package var animatedFormat: VariantSpec.Format?

    public init(url: String, size: Size? = nil, fit: VariantSpec.Fit? = nil, format: VariantSpec.Format? = nil,
                quality: Int? = nil, priority: Priority = .normal, options: Options = []) {
        self.url = url
        self.size = size
        self.fit = fit
        self.format = format
        self.quality = quality
        self.priority = priority
        self.options = options
    }

    /// A thumbnail request for a `width` x `height` box.
    public init(url: String, width: Int, height: Int, fit: VariantSpec.Fit? = nil, format: VariantSpec.Format? = nil,
                quality: Int? = nil, priority: Priority = .normal, options: Options = []) {
        self.init(url: url, size: Size(width: width, height: height), fit: fit, format: format, quality: quality,
                  priority: priority, options: options)
    }
}

/// An image as the pipeline hands it out.
public struct ImageResponse: Sendable {
    /// Where the bytes came from.
    public enum Source: String, Sendable, Codable, CaseIterable {
        /// The in-process memory tier.
        case memory
        /// The disk cache (a variant rendered now from a cached original too).
        case disk
        /// Downloaded now (a variant rendered from a fresh download too).
        case network
        /// The cached bytes, confirmed by the origin (HTTP 304).
        case revalidated
        /// The cached bytes past their freshness: within stale-while-revalidate
        /// (the origin is asked behind this answer), or while the origin is
        /// unreachable or failing (stale-if-error).
        case stale
        /// The request failed and asked for a placeholder; see `error`.
        case placeholder
        /// The shared second tier (`[tier2]`): stored by another node, not
        /// asked of the origin (a variant rendered now from it too).
        case tier2
    }

    /// Encoded image bytes.
    public let data: Data
    /// The MIME type of `data`, decided from the bytes.
    public let contentType: String
    /// Pixels; 0 when the header cannot be read (a format not rendered here).
    public let width: Int
    public let height: Int
    public internal(set) var source: Source
    /// The key the image is stored under (nil for a placeholder and for
    /// originals the origin marked `no-store`).
    public let cacheKey: CacheKey?
    /// For a placeholder: why the real image is not there.
    public internal(set) var error: ArtCacheError?
    /// The index row of the stored image, when there is one (for the CLI's
    /// `--json` and the service's headers).
    package let entry: CacheEntry?
    /// The origin declared a wrong Content-Type that was corrected (originals).
    public let repaired: Bool
    /// A thumbnail rendered for this request (not found in the cache).
    public let rendered: Bool
    /// When the original these bytes show stops being fresh (nil: no expiry
    /// known): past it, a memory hit is not served as is (it revalidates as
    /// a disk hit does).
    package let freshUntil: Date?
    /// The original's upright size and placeholder, once computed (nil
    /// until then: they are computed in the background after the original is
    /// stored; ``ImagePipeline/info(for:priority:options:)`` waits for them).
    /// For a thumbnail, its original's.
    public internal(set) var info: ImageInfo?
    /// The original's caching rules as its origin gave them (its stale
    /// windows, `must-revalidate`, `immutable`): what the service passes on.
    package internal(set) var originRules: HTTPValidators?
    /// When the original these bytes show was stored (its index row's
    /// `createdAt`): the service's `Last-Modified` when the origin sent none.
    package internal(set) var originStoredAt: Date?
    /// An animated source answered with its first frame in an animated
    /// format (WebP): why (`frames`: past `[thumbnails] max_frames` or
    /// `max_animation_pixels`), for `X-ArtCache-Still`. Known when rendered
    /// for this request or kept in memory since; nil otherwise.
    package internal(set) var still: String?
    /// Why these bytes are answered but kept nowhere (nil: they are kept):
    /// nobody downstream may keep them either (`Cache-Control: no-store`).
    /// Decided with the answer, from the original it was made from.
    package internal(set) var notKept: NotKept?

    /// Why an answer is not kept.
    package enum NotKept: String, Sendable {
        /// Made from a stored original smaller than the size asked (its
        /// provider's larger rendition could not be fetched now): the next
        /// request tries the larger one again.
        case undersized
        /// Its original's origin said `no-store`.
        case noStore = "no-store"
    }

    public init(data: Data, contentType: String, width: Int, height: Int, source: Source, cacheKey: CacheKey?,
                error: ArtCacheError? = nil, repaired: Bool = false, rendered: Bool = false) {
        self.init(data: data, contentType: contentType, width: width, height: height, source: source, cacheKey: cacheKey,
                  error: error, entry: nil, repaired: repaired, rendered: rendered, freshUntil: nil)
    }

    package init(data: Data, contentType: String, width: Int, height: Int, source: Source, cacheKey: CacheKey?,
                 error: ArtCacheError? = nil, entry: CacheEntry?, repaired: Bool = false, rendered: Bool = false,
                 freshUntil: Date?) {
        self.data = data
        self.contentType = contentType
        self.width = width
        self.height = height
        self.source = source
        self.cacheKey = cacheKey
        self.error = error
        self.entry = entry
        self.repaired = repaired
        self.rendered = rendered
        self.freshUntil = freshUntil
    }

    func with(source: Source) -> ImageResponse {
        var copy = self
        copy.source = source
        return copy
    }

    func with(info: ImageInfo?) -> ImageResponse {
        var copy = self
        copy.info = info
        return copy
    }

    /// These bytes with their original's caching rules and stored time
    /// (`original`: the original's index row, if it has one).
    func with(original: CacheEntry?) -> ImageResponse {
        var copy = self
        copy.originRules = original?.validators
        copy.originStoredAt = original?.createdAt
        return copy
    }

    func with(error: ArtCacheError) -> ImageResponse {
        var copy = self
        copy.error = error
        return copy
    }
}

extension ThumbnailOptions {
    /// The pipeline request these (resolved) options ask for, at `priority`
    /// (nil: these options' `pri`, else normal).
    public func request(url: String, priority: ImagePriority? = nil, options: ImageRequest.Options = []) -> ImageRequest {
        ImageRequest(url: url, size: size, fit: fit, format: format, quality: quality, priority: priority ?? self.priority ?? .normal,
                     options: options)
    }
}
