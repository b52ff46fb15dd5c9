import ArtCacheRender
import ArtCacheStore
import Foundation

/// What a page needs of an image before its bytes arrive: the original's
/// upright size (for `<img width height>`) and its placeholder — a dominant
/// colour and a ThumbHash — computed once when the original is stored and
/// kept in the index.
public struct ImageInfo: Sendable, Hashable, Codable {
    /// The URL as given (normalized).
    public let url: String
    /// The original's pixels, EXIF orientation applied (one frame of an animation).
    public let width: Int
    public let height: Int
    /// The dominant colour, `#rrggbb`.
    public let color: String
    /// The ThumbHash (<https://evanw.github.io/thumbhash/>); base64 in JSON.
    public let thumbHash: Data

    enum CodingKeys: String, CodingKey {
        case url, width, height, color
        case thumbHash = "thumbhash"
    }

    public init(url: String, width: Int, height: Int, color: String, thumbHash: Data) {
        self.url = url
        self.width = width
        self.height = height
        self.color = color
        self.thumbHash = thumbHash
    }

    /// The ThumbHash as base64 (as JSON carries it).
    public var thumbHashBase64: String { thumbHash.base64EncodedString() }

    /// The ThumbHash decoded (32 px on the longer side) as a PNG data URL,
    /// for a CSS `background-image` while the image loads; nil when the
    /// hash is malformed (never for one this cache computed).
    public func placeholderDataURL() -> String? {
        try? Placeholder(color: color, thumbHash: [UInt8](thumbHash)).dataURL()
    }

    /// The info an index row holds; nil until computed (or for a variant's row).
    init?(entry: CacheEntry) {
        guard entry.kind == .original, let color = entry.color, let hash = entry.thumbHash,
              let width = entry.width, let height = entry.height else { return nil }
        self.init(url: entry.url, width: width, height: height, color: color, thumbHash: hash)
    }
}
