import ArtCacheCore
import Foundation

/// `[thumbnails]`: the variants made at prefetch time and the render limits.
/// `ThumbnailSettings()` holds the documented defaults of `cache.conf` (the
/// configuration table reads them from here).
public struct ThumbnailSettings: Sendable, Equatable {
    /// Made for every original during prefetch.
    public var sizes: [VariantSpec] = [VariantSpec(width: 100, height: 100), VariantSpec(width: 300, height: 300)]
    public var format: VariantSpec.Format = .auto
    public var quality = 80
    public var fit: VariantSpec.Fit = .contain
    /// RGB 0...255, for flattening alpha into formats without it.
    public var background: [Double] = [255, 255, 255]
    /// Source width × height allowed (of the frame a still is made from),
    /// checked from the header.
    public var maxSourcePixels = 50_000_000
    /// Animated GIF and WebP sources give animated WebP thumbnails up to
    /// this many frames and `maxAnimationPixels` (width × height × frames);
    /// past either, their first frame (`X-ArtCache-Still: frames`).
    public var maxFrames = 100
    public var maxAnimationPixels = 50_000_000
    /// Largest output side.
    public var maxOutput = 4096
    /// Rasterise SVG (off: an SVG gets a typed "unsupported" error).
    public var allowSVG = false
    /// Decode BMP and ICO through ImageMagick (untrusted; off by default).
    public var allowMagick = false
    /// Renders at once; 0 means one per core.
    public var concurrency = 0
    /// Image file shown for failed requests that ask for a placeholder
    /// (scaled to the requested size); empty: a generated neutral grey.
    public var placeholder = ""
    /// Longest a render may take; past it libvips is told to stop and the
    /// request ends with a typed error (`.tooLarge`), freeing its worker.
    public var renderTimeout: TimeInterval = 30
    /// JPEG sources (sRGB or grey) to JPEG, WebP or AVIF `contain`/`cover`
    /// outputs go through libjpeg-turbo directly (DCT-scaled decode,
    /// Lanczos-3), and libjpeg-turbo, libwebp or libheif encode, instead of
    /// libvips: about twice as fast on artwork. Off: libvips renders everything.
    public var fastJPEG = true
    /// JPEG outputs whose longer side is at least this many pixels are
    /// progressive (SOF2: a browser or a client image layer shows a coarse
    /// picture early), smaller ones baseline; 0: every JPEG is progressive.
    /// Bytes and encode time by size are in Benchmarks/RESULTS.md (issue 52).
    public var progressiveFrom = 600
    /// The quality (JPEG scale, like `q=`) a service answer negotiated by
    /// `Accept` is made at when the browser sends `Save-Data: on` (data-saver
    /// mode), if the request asked for more; the format stays the one
    /// `Accept` gets (issue 52, docs/formats.md). 45: at 50 the 100 px answers
    /// kept 0.70-0.72x of the normal bytes, against a goal of 0.7x
    /// (Benchmarks/RESULTS.md, P2d).
    public var saveDataQuality = 45

    /// The documented defaults of `cache.conf`; set the fields to change them.
    public init() {}

    package var renderLimits: RenderLimits {
        RenderLimits(maxSourcePixels: maxSourcePixels, maxFrames: maxFrames, maxAnimationPixels: maxAnimationPixels,
                     maxOutput: maxOutput)
    }

    /// A spec for an ad-hoc size with these defaults.
    public func spec(size: String, fit: VariantSpec.Fit? = nil, format: VariantSpec.Format? = nil,
                     quality: Int? = nil) -> VariantSpec? {
        VariantSpec(size: size, fit: fit ?? self.fit, format: format ?? self.format, quality: quality ?? self.quality,
                    background: background)
    }

    /// `#rrggbb` (or `rrggbb`) → [r, g, b].
    package static func parseColor(_ text: String) -> [Double]? {
        var hex = text.trimmingCharacters(in: .whitespaces)
        if hex.hasPrefix("#") { hex.removeFirst() }
        guard hex.count == 6, let value = UInt32(hex, radix: 16) else { return nil }
        return [Double(value >> 16 & 0xFF), Double(value >> 8 & 0xFF), Double(value & 0xFF)]
    }

    /// `[r, g, b]` → `#rrggbb` (the form `cache.conf` documents).
    package static func colorText(_ rgb: [Double]) -> String {
        "#" + CacheKey.hex(rgb.prefix(3).map { UInt8(truncatingIfNeeded: Int($0.rounded()) & 0xFF) })
    }
}
