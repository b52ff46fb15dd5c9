import Foundation

extension PixelBuffer {
    /// RGB (or RGBA when there is alpha: 2 or 4 channels): what WebP and
    /// AVIF encoders take; grey is widened, RGB and RGBA are returned as they are.
    package var colour: PixelBuffer {
        guard channels == 1 || channels == 2 else { return self }
        let out = channels == 1 ? 3 : 4
        var wide = PixelBuffer(width: width, height: height, channels: out)
        let inChannels = channels
        bytes.withUnsafeBufferPointer { src in
            wide.bytes.withUnsafeMutableBufferPointer { dst in
                for i in 0..<(width * height) {
                    let grey = src[i * inChannels]
                    dst[i * out] = grey
                    dst[i * out + 1] = grey
                    dst[i * out + 2] = grey
                    if out == 4 { dst[i * out + 3] = src[i * inChannels + 1] }
                }
            }
        }
        return wide
    }

    /// Whether the last channel is alpha (2 or 4 channels).
    package var hasAlpha: Bool { channels == 2 || channels == 4 }
}
