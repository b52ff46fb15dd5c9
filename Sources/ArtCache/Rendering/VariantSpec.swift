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

    /// e.g. `100x100,contain,auto,q80,bgffffff`.
    public var canonical: String {
        let bg = CacheKey.hex(background.map { UInt8(truncatingIfNeeded: Int($0.rounded()) & 0xFF) })
        return "\(width)x\(height),\(fit.rawValue),\(format.rawValue),q\(quality),bg\(bg)"
    }
}

/// Limits checked from the image header before any pixel is decoded.
public struct RenderLimits: Sendable, Equatable {
    public var maxSourcePixels: Int
    public var maxFrames: Int
    public var maxOutput: Int

    public init(maxSourcePixels: Int = 50_000_000, maxFrames: Int = 1000, maxOutput: Int = 4096) {
        self.maxSourcePixels = maxSourcePixels
        self.maxFrames = maxFrames
        self.maxOutput = maxOutput
    }
}

/// Why a render failed.
public struct RenderError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Codable {
        /// No loader for these bytes, or a loader we do not allow (PDF, JPEG XL, SVG when off...).
        case unsupported
        /// Over the pixel, frame or output limits (decided from the header).
        case tooLarge = "too_large"
        /// Corrupt or truncated image data.
        case decode
        /// The output format could not be written.
        case encode
        /// The render took longer than `[thumbnails] render_timeout` and was
        /// stopped (libvips' kill flag); its worker is free again.
        case timedOut = "render_timeout"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
    /// Failure key in summaries: `render_unsupported`, `render_too_large`, ...
    public var reason: String { "render_\(code.rawValue)" }
}
