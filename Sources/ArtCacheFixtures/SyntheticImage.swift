import CVipsFixtures
import CVipsShim
import Foundation

/// Images generated with libvips for tests, benchmarks and examples (never
/// linked into the `artcache` binary).
public enum SyntheticImage {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A gradient, 3 (RGB) or 4 (RGBA) bands, encoded with a libvips suffix
    /// (".png", ".jpg[Q=85]", ".webp", ".gif", ".tif", ".heic", ".avif",
    /// ".jxl") or "magick:bmp" / "magick:ico".
    public static func make(width: Int = 64, height: Int = 48, bands: Int = 3, suffix: String) throws -> Data {
        try generate("a \(suffix) image") { cvips_test_image(Int32(width), Int32(height), Int32(bands), suffix, $0, $1) }
    }

    public static func cmykJPEG(width: Int = 64, height: Int = 48, withProfile: Bool) throws -> Data {
        try generate("a CMYK JPEG") { cvips_test_cmyk_jpeg(Int32(width), Int32(height), withProfile ? 1 : 0, $0, $1) }
    }

    public static func orientedJPEG(width: Int, height: Int, orientation: Int) throws -> Data {
        try generate("an oriented JPEG") { cvips_test_oriented_jpeg(Int32(width), Int32(height), Int32(orientation), $0, $1) }
    }

    /// A zone plate JPEG (grey, or coloured): fine rings up to the Nyquist
    /// limit, where a downscale that aliases shows moiré.
    public static func zonePlateJPEG(width: Int = 600, height: Int = 600, colour: Bool = true, quality: Int = 90) throws -> Data {
        try generate("a zone plate JPEG") { cvips_test_zone_jpeg(Int32(width), Int32(height), colour ? 1 : 0, Int32(quality), $0, $1) }
    }

    public static func animatedGIF(width: Int, height: Int, frames: Int) throws -> Data {
        try generate("an animated GIF") { cvips_test_animated_gif(Int32(width), Int32(height), Int32(frames), $0, $1) }
    }

    /// An animation whose frame `i` is shown for `delays[i]` ms, looping
    /// forever: a GIF, or an animated WebP (`webp`).
    public static func animation(width: Int, height: Int, delays: [Int], webp: Bool) throws -> Data {
        let delays = delays.map { Int32($0) }
        return try generate(webp ? "an animated WebP" : "an animated GIF") { out, length in
            delays.withUnsafeBufferPointer {
                cvips_test_animation(Int32(width), Int32(height), Int32(delays.count), webp ? 1 : 0, $0.baseAddress, out, length)
            }
        }
    }

    /// Interleaved 8-bit pixels (`bands` 1, 3 or 4) encoded by libvips'
    /// saver (`format` "webp", "avif" or "jpeg") with the options of the
    /// product's libvips save step; `effort` is the saver's own option.
    public static func vipsSave(_ pixels: [UInt8], width: Int, height: Int, bands: Int, format: String,
                                quality: Int, effort: Int) throws -> Data {
        precondition(pixels.count == width * height * bands, "pixel count")
        let code = switch format {
        case "webp": CVIPS_FORMAT_WEBP
        case "avif": CVIPS_FORMAT_AVIF
        default: CVIPS_FORMAT_JPEG
        }
        return try generate("\(format) from pixels") { out, length in
            pixels.withUnsafeBytes {
                cvips_test_save_pixels($0.baseAddress, Int32(width), Int32(height), Int32(bands), Int32(code),
                                       Int32(quality), Int32(effort), out, length)
            }
        }
    }

    /// What a ``tagged(_:width:height:depth:suffix:)`` image's numbers mean.
    public enum ColourSpace: String, Sendable, CaseIterable {
        /// Converted from sRGB to libvips' built-in Display P3 profile.
        case p3
        /// The sRGB numbers tagged with an Adobe RGB (1998) profile (lcms2):
        /// they mean more saturated colours than they would untagged.
        case adobe
        /// Converted to (and tagged with) libvips' built-in sRGB profile.
        case srgb
        /// No profile.
        case none
    }

    /// A colourful image (saturated corners) whose numbers are in `space`,
    /// tagged with its ICC profile, encoded with a libvips suffix (".jpg[Q=95]",
    /// ".png"; `depth` 16 and `alpha` (opaque) for PNG only) that keeps the profile.
    public static func tagged(_ space: ColourSpace, width: Int = 300, height: Int = 200, depth: Int = 8,
                              alpha: Bool = false, suffix: String = ".jpg[Q=95]") throws -> Data {
        try generate("a \(space) \(suffix) image") {
            cvips_test_tagged_image(Int32(width), Int32(height), space.rawValue, Int32(depth), alpha ? 1 : 0, suffix, $0, $1)
        }
    }

    /// The Adobe RGB (1998) ICC profile ``ColourSpace/adobe`` tags with.
    public static func adobeRGBProfile() throws -> Data {
        try generate("an Adobe RGB profile") { cvips_test_adobe_rgb_profile($0, $1) }
    }

    /// The colour-managed reference thumbnail of an encoded image: libvips'
    /// icc_transform of the whole image to sRGB (through its embedded
    /// profile, perceptual intent), then a thumbnail into `width` x `height`; a PNG, no profile.
    public static func managedThumbnail(_ data: Data, width: Int, height: Int) throws -> Data {
        try generate("a colour-managed thumbnail") { out, length in
            data.withUnsafeBytes { cvips_test_managed_thumbnail($0.baseAddress, $0.count, Int32(width), Int32(height), out, length) }
        }
    }

    /// Decoded pixels (8-bit, no colour transform) of an encoded image.
    public struct Pixels: Sendable, Equatable {
        public let width: Int
        public let height: Int
        public let bands: Int
        public let bytes: [UInt8]

        public init(width: Int, height: Int, bands: Int, bytes: [UInt8]) {
            (self.width, self.height, self.bands, self.bytes) = (width, height, bands, bytes)
        }

        /// Mean absolute difference per sample (0...255) over the first three
        /// bands; nil when the sizes differ.
        public func meanDifference(_ other: Pixels) -> Double? {
            guard width == other.width, height == other.height, bands >= 3, other.bands >= 3 else { return nil }
            var total = 0
            for pixel in 0..<(width * height) {
                for band in 0..<3 {
                    total += abs(Int(bytes[pixel * bands + band]) - Int(other.bytes[pixel * other.bands + band]))
                }
            }
            return Double(total) / Double(width * height * 3)
        }
    }

    /// TIFF fixtures (`cvips_test_tiff`): a sub-IFD pyramid, or the
    /// gradient in a wider integer format spanning its whole range.
    public enum TIFFKind: Int32, CaseIterable, Sendable {
        case subIFDPyramid = 0, unsigned16 = 1, signed16 = 2, unsigned32 = 3, signed32 = 4, omeMultiPage = 5
    }

    public static func tiff(_ kind: TIFFKind, width: Int = 400, height: Int = 300) throws -> Data {
        try generate("a \(kind) TIFF") { cvips_test_tiff(Int32(width), Int32(height), kind.rawValue, $0, $1) }
    }

    public static func pixels(_ data: Data) throws -> Pixels {
        guard cvips_init("artcache-fixtures") == 0 else { throw Failure(description: "libvips failed to start") }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        var width: Int32 = 0, height: Int32 = 0, bands: Int32 = 0
        let status = data.withUnsafeBytes { cvips_test_pixels($0.baseAddress, $0.count, &width, &height, &bands, &buffer, &length) }
        guard status == 0, let buffer else { throw Failure(description: "libvips could not decode the image") }
        defer { cvips_free(buffer) }
        return Pixels(width: Int(width), height: Int(height), bands: Int(bands),
                      bytes: Array(UnsafeRawBufferPointer(start: buffer, count: length)))
    }

    private static func generate(_ what: String,
                                 _ make: (UnsafeMutablePointer<UnsafeMutableRawPointer?>, UnsafeMutablePointer<Int>) -> Int32) throws -> Data {
        guard cvips_init("artcache-fixtures") == 0 else { throw Failure(description: "libvips failed to start") }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard make(&buffer, &length) == 0, let buffer else {
            if let message = cvips_error_take() { free(message) }
            throw Failure(description: "libvips could not make \(what)")
        }
        defer { cvips_free(buffer) }
        return Data(bytes: buffer, count: length)
    }
}
