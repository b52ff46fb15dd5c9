@_spi(Benchmarks) import ArtCacheCore
import Foundation

/// What a thumbnail variant is: box, fit, output format and quality. Its
/// `canonical` string names it in the index, so one spec always maps to one
/// variant key.
public struct VariantSpec: Sendable, Hashable, Codable {
    public enum Fit: String, Sendable, Codable, CaseIterable {
        /// Fit inside the box, keeping the aspect ratio.
        case contain
        /// Fill the box and crop the centre.
        case cover
        /// Fill the box and crop where libvips' attention finds the subject.
        case smart
    }

    public enum Format: String, Sendable, Codable, CaseIterable {
        /// JPEG for opaque images, PNG when there is alpha.
        case auto
        case jpeg, webp, png, avif
    }

    public var width: Int
    public var height: Int
    public var fit: Fit
    public var format: Format
    public var quality: Int
    /// RGB 0...255 that alpha is flattened onto when the output has none.
    public var background: [Double]

    public init(width: Int, height: Int, fit: Fit = .contain, format: Format = .auto, quality: Int = 80,
                background: [Double] = [255, 255, 255]) {
        self.width = width
        self.height = height
        self.fit = fit
        self.format = format
        self.quality = quality
        self.background = background
    }

    /// From `WIDTHxHEIGHT` (e.g. `100x100`); nil when malformed or not positive.
    public init?(size: String, fit: Fit = .contain, format: Format = .auto, quality: Int = 80,
                 background: [Double] = [255, 255, 255]) {
        let parts = size.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0, (1...100).contains(quality) else {
            return nil
        }
        self.init(width: w, height: h, fit: fit, format: format, quality: quality, background: background)
    }

    /// e.g. `100x100,contain,auto,q80,bgffffff`: the on-disk name of the
    /// variant (its key is made from it), so its format never changes.
    public var canonical: String {
        let bg = CacheKey.hex(background.map { UInt8(truncatingIfNeeded: Int($0.rounded()) & 0xFF) })
        return "\(width)x\(height),\(fit.rawValue),\(format.rawValue),q\(quality),bg\(bg)"
    }
}

/// A box in pixels: a thumbnail's bounding box (`ImageRequest.Size`).
public struct ImageSize: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// A square box.
    public init(_ side: Int) { self.init(width: side, height: side) }

    /// From `WIDTHxHEIGHT` (e.g. `100x100`); nil when malformed.
    public init?(_ text: String) {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]) else { return nil }
        self.init(width: w, height: h)
    }

    public var description: String { "\(width)x\(height)" }
}

/// Limits checked from the image header before any pixel is decoded.
package struct RenderLimits: Sendable, Equatable {
    package var maxSourcePixels: Int
    package var maxFrames: Int
    package var maxOutput: Int

    package init(maxSourcePixels: Int = 50_000_000, maxFrames: Int = 1000, maxOutput: Int = 4096) {
        self.maxSourcePixels = maxSourcePixels
        self.maxFrames = maxFrames
        self.maxOutput = maxOutput
    }
}

