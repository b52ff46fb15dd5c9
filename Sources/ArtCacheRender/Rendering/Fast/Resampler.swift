import ArtCacheCore
import CPixels
import Foundation

/// Downscaling with a Lanczos-3 kernel, separable (columns, then rows), the
/// filter libvips' `thumbnail` reduces with: not a box filter, so fine
/// detail (a zone plate's rings) does not alias into moiré.
///
/// The kernel is widened by the scale factor (each output pixel sees 3
/// source pixels × factor on each side) and its weights are normalized per
/// output pixel, so edges keep their level. Weights are computed once per
/// axis; the inner loops run over unsafe buffers (no bounds checks).
package enum Resampler {
    /// The taps of one axis: for output `i`, `count` weights starting at
    /// source index `start[i]` (clamped inside the image), `weights[i * taps ..< i * taps + count[i]]`.
    struct Taps: Sendable {
        var start: [Int32]
        var count: [Int32]
        var weights: [Float]
        var taps: Int
    }

    static func lanczos3(_ x: Double) -> Double {
        if x == 0 { return 1 }
        guard abs(x) < 3 else { return 0 }
        let px = Double.pi * x
        return 3 * sin(px) * sin(px / 3) / (px * px)
    }

    /// The taps of the sizes seen last (artwork comes in few sizes): computed
    /// once, not per image (they cost sines). At most 256 pairs.
    private static let memo = BoundedMemo<Int, Taps>(capacity: 256)

    /// Taps taking `source` samples to `target` (target ≤ source), memoized.
    static func taps(source: Int, target: Int) -> Taps {
        let key = source << 32 | target
        return memo.value(for: key) { computeTaps(source: source, target: target) }
    }

    static func computeTaps(source: Int, target: Int) -> Taps {
        let factor = Double(source) / Double(target)
        let scale = max(1, factor)
        let support = 3 * scale
        let taps = Int((support * 2).rounded(.up)) + 1
        var start = [Int32](repeating: 0, count: target)
        var count = [Int32](repeating: 0, count: target)
        var weights = [Float](repeating: 0, count: target * taps)
        for i in 0..<target {
            let centre = (Double(i) + 0.5) * factor
            let first = max(0, Int((centre - support).rounded(.down)))
            let last = min(source - 1, Int((centre + support).rounded(.up)))
            var sum = 0.0
            var row = [Double]()
            row.reserveCapacity(taps)
            for j in first...max(first, last) where row.count < taps {
                let w = lanczos3((Double(j) + 0.5 - centre) / scale)
                row.append(w)
                sum += w
            }
            start[i] = Int32(first)
            count[i] = Int32(row.count)
            for (k, w) in row.enumerated() { weights[i * taps + k] = Float(sum != 0 ? w / sum : (k == 0 ? 1 : 0)) }
        }
        return Taps(start: start, count: count, weights: weights, taps: taps)
    }

    /// `image` resized to `width` x `height` (each side no larger than the
    /// image's): columns first (each output row a weighted sum of whole
    /// source rows), then rows, eight output rows at a time, in C
    /// (`cpix_resample`), so that the loop is fast in debug builds too.
    package static func resize(_ image: PixelBuffer, width: Int, height: Int) -> PixelBuffer {
        precondition(width >= 1 && height >= 1 && width <= image.width && height <= image.height, "downscale only")
        precondition(image.channels == 1 || image.channels == 3, "grey or RGB")
        if width == image.width && height == image.height { return image }
        let h = taps(source: image.width, target: width)
        let v = taps(source: image.height, target: height)
        // Scratch as cpixels.h asks.
        var columns = [Float](repeating: 0, count: image.width * image.channels * 16)
        var sums = [Float](repeating: 0, count: width * image.channels * 8)
        // Every output byte is written: no zeroing first.
        let out = PixelBuffer.filled(width: width, height: height, channels: image.channels) { dst in
            image.bytes.withUnsafeBufferPointer { src in
                cpix_resample(src.baseAddress, Int32(image.width), Int32(image.channels), dst.baseAddress,
                              Int32(width), Int32(height),
                              h.start, h.count, h.weights, Int32(h.taps),
                              v.start, v.count, v.weights, Int32(v.taps),
                              &columns, &sums)
            }
            return true
        }
        return out!
    }
}
