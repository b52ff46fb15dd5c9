import CWebP
import Foundation

/// Lossy WebP from pixels with libwebp's simple API (`WebPEncodeRGB`: the
/// default preset, method 4, as libvips' `webpsave` uses by default), no
/// metadata. Grey pixels are widened to RGB first (WebP has no grey).
enum WebPEncoder {
    static func encode(_ pixels: PixelBuffer, quality: Int) throws(TurboJPEGError) -> Data {
        var rgb = pixels
        if pixels.channels == 1 {
            rgb = PixelBuffer(width: pixels.width, height: pixels.height, channels: 3,
                              bytes: pixels.bytes.flatMap { [$0, $0, $0] })
        }
        var output: UnsafeMutablePointer<UInt8>?
        let length = rgb.bytes.withUnsafeBufferPointer { source in
            WebPEncodeRGB(source.baseAddress, Int32(rgb.width), Int32(rgb.height), Int32(rgb.rowBytes), Float(quality), &output)
        }
        defer { if let output { WebPFree(output) } }
        guard length > 0, let output else { throw TurboJPEGError(message: "libwebp could not encode \(rgb.width)x\(rgb.height)") }
        return Data(bytes: output, count: length)
    }
}
