@_spi(Benchmarks) import ArtCacheCore
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
    /// once, not per image (they cost sines). At most `memoLimit` pairs.
    private static let memo = Locked<[Int: Taps]>([:])
    static let memoLimit = 256

    /// Taps taking `source` samples to `target` (target ≤ source), memoized.
    static func taps(source: Int, target: Int) -> Taps {
        let key = source << 32 | target
        if let known = memo.withLock({ $0[key] }) { return known }
        let made = computeTaps(source: source, target: target)
        memo.withLock { memo in
            if memo.count >= memoLimit { memo.removeAll(keepingCapacity: true) }
            memo[key] = made
        }
        return made
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
    /// image's).
    ///
    /// Columns first: each output row is a weighted sum of whole source
    /// rows (contiguous, so the compiler vectorizes it), into a row of
    /// 4-float pixels; then each output pixel is a sum of those `SIMD4`s.
    package static func resize(_ image: PixelBuffer, width: Int, height: Int) -> PixelBuffer {
        precondition(width >= 1 && height >= 1 && width <= image.width && height <= image.height, "downscale only")
        if width == image.width && height == image.height { return image }
        let channels = image.channels, sourceWidth = image.width
        let horizontal = taps(source: sourceWidth, target: width)
        let vertical = taps(source: image.height, target: height)
        let rowSamples = sourceWidth * channels
        // Every output byte is written below: no zeroing first.
        let out = PixelBuffer.filled(width: width, height: height, channels: channels) { dst in
            image.bytes.withUnsafeBufferPointer { src in
                let column = UnsafeMutableBufferPointer<Float>.allocate(capacity: rowSamples)
                let pixels = UnsafeMutableBufferPointer<SIMD4<Float>>.allocate(capacity: sourceWidth)
                defer { column.deallocate(); pixels.deallocate() }
                vertical.weights.withUnsafeBufferPointer { vWeights in
                    horizontal.weights.withUnsafeBufferPointer { hWeights in
                        for y in 0..<height {
                            // One row of the source reduced vertically.
                            // (Raw pointers and wrapping indices: no overflow
                            // checks in the loop, so it is vectorized.)
                            let first = Int(vertical.start[y]), n = Int(vertical.count[y])
                            let accumulator = column.baseAddress!
                            let w0 = vWeights[y * vertical.taps]
                            var source = src.baseAddress! + first * rowSamples
                            for i in 0..<rowSamples { accumulator[i] = w0 * Float(source[i]) }
                            for k in 1..<max(1, n) {
                                let weight = vWeights[y * vertical.taps + k]
                                source = src.baseAddress! + (first + k) * rowSamples
                                for i in 0..<rowSamples { accumulator[i] += weight * Float(source[i]) }
                            }
                            if channels == 3 {
                                for x in 0..<sourceWidth {
                                    pixels[x] = SIMD4(column[3 * x], column[3 * x + 1], column[3 * x + 2], 0)
                                }
                            } else {
                                for x in 0..<sourceWidth {
                                    var p = SIMD4<Float>(repeating: 0)
                                    for c in 0..<min(4, channels) { p[c] = column[channels * x + c] }
                                    pixels[x] = p
                                }
                            }
                            // Then horizontally, a pixel at a time.
                            let outRow = y * width * channels
                            for x in 0..<width {
                                let start = Int(horizontal.start[x]), taps = Int(horizontal.count[x])
                                let w = x * horizontal.taps
                                var sum = SIMD4<Float>(repeating: 0)
                                for k in 0..<taps { sum += hWeights[w + k] * pixels[start + k] }
                                let clamped = (sum + 0.5).clamped(lowerBound: SIMD4(repeating: 0), upperBound: SIMD4(repeating: 255))
                                for c in 0..<channels { dst[outRow + x * channels + c] = UInt8(clamped[c]) }
                            }
                        }
                    }
                }
            }
            return true
        }
        return out!
    }
}
