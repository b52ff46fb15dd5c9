import Foundation

extension PixelBuffer {
    /// Upright: the pixels turned as EXIF `orientation` (1...8) says the
    /// stored ones are to be shown (5...8 swap the sides).
    package func oriented(_ orientation: Int) -> PixelBuffer {
        guard (2...8).contains(orientation) else { return self }
        let (w, h) = (width, height)
        let swaps = orientation >= 5
        var out = PixelBuffer(width: swaps ? h : w, height: swaps ? w : h, channels: channels)
        let outWidth = out.width, outHeight = out.height, channels = channels
        bytes.withUnsafeBufferPointer { src in
            out.bytes.withUnsafeMutableBufferPointer { dst in
                for y in 0..<outHeight {
                    for x in 0..<outWidth {
                        // The stored pixel shown at (x, y).
                        let (sx, sy): (Int, Int) = switch orientation {
                        case 2: (w - 1 - x, y)
                        case 3: (w - 1 - x, h - 1 - y)
                        case 4: (x, h - 1 - y)
                        case 5: (y, x)
                        case 6: (y, h - 1 - x)
                        case 7: (w - 1 - y, h - 1 - x)
                        default: (w - 1 - y, x)  // 8
                        }
                        let s = (sy * w + sx) * channels, d = (y * outWidth + x) * channels
                        for c in 0..<channels { dst[d + c] = src[s + c] }
                    }
                }
            }
        }
        return out
    }

    /// The `width` x `height` rectangle at (`left`, `top`).
    package func cropped(left: Int, top: Int, width newWidth: Int, height newHeight: Int) -> PixelBuffer {
        precondition(left >= 0 && top >= 0 && left + newWidth <= width && top + newHeight <= height, "crop inside")
        if newWidth == width && newHeight == height { return self }
        var out = PixelBuffer(width: newWidth, height: newHeight, channels: channels)
        let rowBytes = newWidth * channels
        bytes.withUnsafeBufferPointer { src in
            out.bytes.withUnsafeMutableBufferPointer { dst in
                for y in 0..<newHeight {
                    let s = ((top + y) * width + left) * channels
                    for i in 0..<rowBytes { dst[y * rowBytes + i] = src[s + i] }
                }
            }
        }
        return out
    }
}
