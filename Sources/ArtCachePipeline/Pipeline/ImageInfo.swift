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
    /// Frames of an animated GIF or WebP; 1 for a still (and for an
    /// original stored before frames were recorded).
    public let frames: Int
    /// More than one frame (JSON `animated`).
    public var animated: Bool { frames > 1 }

    enum CodingKeys: String, CodingKey {
        case url, width, height, color, frames, animated
        case thumbHash = "thumbhash"
    }

    public init(url: String, width: Int, height: Int, color: String, thumbHash: Data, frames: Int = 1) {
        self.url = url
        self.width = width
        self.height = height
        self.color = color
        self.thumbHash = thumbHash
        self.frames = max(1, frames)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(url: c.decode(String.self, forKey: .url), width: c.decode(Int.self, forKey: .width),
                      height: c.decode(Int.self, forKey: .height), color: c.decode(String.self, forKey: .color),
                      thumbHash: c.decode(Data.self, forKey: .thumbHash),
                      frames: c.decodeIfPresent(Int.self, forKey: .frames) ?? 1)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(url, forKey: .url)
        try c.encode(width, forKey: .width)
        try c.encode(height, forKey: .height)
        try c.encode(color, forKey: .color)
        try c.encode(thumbHash, forKey: .thumbHash)
        try c.encode(animated, forKey: .animated)
        try c.encode(frames, forKey: .frames)
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
        self.init(url: entry.url, width: width, height: height, color: color, thumbHash: hash, frames: entry.frames ?? 1)
    }
}
