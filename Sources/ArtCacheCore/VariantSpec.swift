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
        /// JPEG XL (libvips' `jxlsave`, libjxl): only where `[service] jxl` lets the format policy pick it.
        case jxl
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

    /// From `WIDTHxHEIGHT` (e.g. `100x100`, read as ``ImageSize`` reads it);
    /// nil when malformed or out of bounds.
    public init?(size: String, fit: Fit = .contain, format: Format = .auto, quality: Int = 80,
                 background: [Double] = [255, 255, 255]) {
        guard let parsed = ImageSize(size), (1...100).contains(quality) else { return nil }
        self.init(width: parsed.width, height: parsed.height, fit: fit, format: format, quality: quality, background: background)
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

    /// The largest side a size may name when parsed (the service's bound).
    package static let maxSide = 10_000

    /// From `WIDTHxHEIGHT` (e.g. `100x100`, `x` in either case): ASCII
    /// digits only, each side 1 to 10,000; nil otherwise. The one parser of
    /// sizes: service paths, manifests (HTTP and CLI) and variant specs.
    public init?(_ text: String) {
        func side(_ digits: Substring.UTF8View) -> Int? {
            guard !digits.isEmpty, digits.count <= 5 else { return nil }
            var value = 0
            for byte in digits {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return (1...Self.maxSide).contains(value) ? value : nil
        }
        let parts = text.utf8.split(separator: UInt8(ascii: "x"), maxSplits: 2, omittingEmptySubsequences: false)
        let split = parts.count == 2 ? parts : text.utf8.split(separator: UInt8(ascii: "X"), maxSplits: 2, omittingEmptySubsequences: false)
        guard split.count == 2, let w = side(Substring(split[0]).utf8), let h = side(Substring(split[1]).utf8) else { return nil }
        self.init(width: w, height: h)
    }

    public var description: String { "\(width)x\(height)" }
}
