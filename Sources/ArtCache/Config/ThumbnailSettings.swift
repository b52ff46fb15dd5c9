import Foundation

/// `[thumbnails]`: the variants made at prefetch time and the render limits.
public struct ThumbnailSettings: Sendable, Equatable {
    /// Made for every original during prefetch.
    public var sizes: [VariantSpec]
    public var format: VariantSpec.Format
    public var quality: Int
    public var fit: VariantSpec.Fit
    /// RGB 0...255, for flattening alpha into formats without it.
    public var background: [Double]
    /// Source width × height × frames allowed, checked from the header.
    public var maxSourcePixels: Int
    public var maxFrames: Int
    /// Largest output side.
    public var maxOutput: Int
    /// Rasterise SVG (off: an SVG gets a typed "unsupported" error).
    public var allowSVG: Bool
    /// Decode BMP and ICO through ImageMagick (untrusted; off by default).
    public var allowMagick: Bool
    /// Renders at once; 0 means one per core.
    public var concurrency: Int
    /// Image file shown for failed requests that ask for a placeholder
    /// (scaled to the requested size); empty: a generated neutral grey.
    public var placeholder: String
    /// Longest a render may take; past it libvips is told to stop and the
    /// request ends with a typed error (`.tooLarge`), freeing its worker.
    public var renderTimeout: TimeInterval = 30

    public var renderLimits: RenderLimits {
        RenderLimits(maxSourcePixels: maxSourcePixels, maxFrames: maxFrames, maxOutput: maxOutput)
    }

    /// A spec for an ad-hoc size with these defaults.
    public func spec(size: String, fit: VariantSpec.Fit? = nil, format: VariantSpec.Format? = nil,
                     quality: Int? = nil) -> VariantSpec? {
        VariantSpec(size: size, fit: fit ?? self.fit, format: format ?? self.format, quality: quality ?? self.quality,
                    background: background)
    }

    /// `#rrggbb` (or `rrggbb`) → [r, g, b].
    static func parseColor(_ text: String) -> [Double]? {
        var hex = text.trimmingCharacters(in: .whitespaces)
        if hex.hasPrefix("#") { hex.removeFirst() }
        guard hex.count == 6, let value = UInt32(hex, radix: 16) else { return nil }
        return [Double(value >> 16 & 0xFF), Double(value >> 8 & 0xFF), Double(value & 0xFF)]
    }
}

extension ThumbnailSettings {
    /// The documented defaults of `cache.conf`; set the fields to change them.
    public init() { self = Configuration.defaults.thumbnails }
}
