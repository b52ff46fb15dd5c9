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
