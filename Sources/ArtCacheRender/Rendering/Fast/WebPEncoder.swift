import CWebP
import Foundation

/// Lossy WebP from pixels with libwebp's advanced API (`WebPConfig`,
/// `WebPPicture`, a `WebPMemoryWriter`): the default preset at the caller's
/// quality and method, as libvips' `webpsave` (its `effort` is the method),
/// no metadata. Grey pixels are widened to RGB (WebP has no grey); RGBA
/// keeps its alpha.
enum WebPEncoder {
    /// `quality` 0...100, `method` 0 (fastest) ... 6 (smallest), both clamped.
    static func encode(_ pixels: PixelBuffer, quality: Int, method: Int) throws(EncoderError) -> Data {
        let source = pixels.colour
        var config = WebPConfig()
        guard WebPConfigInit(&config) != 0,
              WebPConfigPreset(&config, WEBP_PRESET_DEFAULT, Float(min(max(quality, 0), 100))) != 0 else {
            throw EncoderError("libwebp", "version mismatch (WebPConfigInit)")
        }
        config.method = Int32(min(max(method, 0), 6))
        guard WebPValidateConfig(&config) != 0 else { throw EncoderError("libwebp", "invalid configuration") }

        var picture = WebPPicture()
        guard WebPPictureInit(&picture) != 0 else { throw EncoderError("libwebp", "version mismatch (WebPPictureInit)") }
        // Lossy: the picture is imported straight to YUV(A), as WebPEncodeRGB does.
        picture.use_argb = 0
        picture.width = Int32(source.width)
        picture.height = Int32(source.height)
        defer { WebPPictureFree(&picture) }
        let imported = source.bytes.withUnsafeBufferPointer { bytes in
            source.hasAlpha ? WebPPictureImportRGBA(&picture, bytes.baseAddress, Int32(source.rowBytes))
                : WebPPictureImportRGB(&picture, bytes.baseAddress, Int32(source.rowBytes))
        }
        guard imported != 0 else { throw EncoderError("libwebp", "cannot import \(source.width)x\(source.height) pixels") }

        var writer = WebPMemoryWriter()
        WebPMemoryWriterInit(&writer)
        defer { WebPMemoryWriterClear(&writer) }
        let encoded = withUnsafeMutablePointer(to: &writer) { writer in
            picture.writer = WebPMemoryWrite
            picture.custom_ptr = UnsafeMutableRawPointer(writer)
            return WebPEncode(&config, &picture)
        }
        guard encoded != 0, let mem = writer.mem else {
            throw EncoderError("libwebp", "cannot encode \(source.width)x\(source.height): error \(picture.error_code.rawValue)")
        }
        return Data(bytes: mem, count: writer.size)
    }
}
