import Foundation

/// ThumbHash: a placeholder of ~25 bytes that keeps an image's colours,
/// layout and aspect ratio (Evan Wallace's algorithm, public domain:
/// https://evanw.github.io/thumbhash/). Encoded from RGBA pixels at most
/// 100×100; a page decodes it into a blurred image while the real one loads.
///
/// Layout of a hash (little-endian bit fields):
/// - 24 bits: luminance DC (6), P DC (6), Q DC (6), luminance scale (5), has alpha (1);
/// - 16 bits: luminance AC count of the shorter side (3), P scale (6), Q scale (6), is landscape (1);
/// - with alpha, 8 bits: alpha DC (4), alpha scale (4);
/// - then 4 bits per AC coefficient: luminance, P, Q (and alpha).
package enum ThumbHash {
    package enum Failure: Error, Equatable, Sendable {
        /// Wider or taller than 100 pixels, or empty: scale it down first.
        case unsupportedSize(width: Int, height: Int)
        /// `rgba` does not hold `width × height × 4` bytes.
        case sizeMismatch(expected: Int, got: Int)
    }

    /// The hash of an image given as 8-bit RGBA rows (not premultiplied).
    package static func encode(width w: Int, height h: Int, rgba: [UInt8]) throws(Failure) -> [UInt8] {
        guard w > 0, h > 0, w <= 100, h <= 100 else { throw .unsupportedSize(width: w, height: h) }
        guard rgba.count == w * h * 4 else { throw .sizeMismatch(expected: w * h * 4, got: rgba.count) }
        let pixels = w * h

        // The average colour, weighted by alpha.
        var average = (r: 0.0, g: 0.0, b: 0.0, a: 0.0)
        for i in 0..<pixels {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            average.r += alpha / 255 * Double(rgba[i * 4])
            average.g += alpha / 255 * Double(rgba[i * 4 + 1])
            average.b += alpha / 255 * Double(rgba[i * 4 + 2])
            average.a += alpha
        }
        if average.a > 0 {
            average.r /= average.a
            average.g /= average.a
            average.b /= average.a
        }
        let hasAlpha = average.a < Double(pixels)
        let limit = hasAlpha ? 5.0 : 7.0  // fewer luminance terms when alpha needs room
        let longest = Double(max(w, h))
        let lx = max(1, rounded(limit * Double(w) / longest))
        let ly = max(1, rounded(limit * Double(h) / longest))

        // RGBA → LPQA, composited over the average colour.
        var l = [Double](repeating: 0, count: pixels), p = l, q = l, a = l
        for i in 0..<pixels {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            let r = average.r * (1 - alpha) + alpha / 255 * Double(rgba[i * 4])
            let g = average.g * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 1])
            let b = average.b * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 2])
            l[i] = (r + g + b) / 3
            p[i] = (r + g) / 2 - b
            q[i] = r - g
            a[i] = alpha
        }

        let luminance = channel(l, nx: max(3, lx), ny: max(3, ly), width: w, height: h)
        let yellowBlue = channel(p, nx: 3, ny: 3, width: w, height: h)
        let redGreen = channel(q, nx: 3, ny: 3, width: w, height: h)
        let opacity = hasAlpha ? channel(a, nx: 5, ny: 5, width: w, height: h) : Channel(dc: 1, ac: [], scale: 1)

        let isLandscape = w > h
        let header24 = rounded(63 * luminance.dc)
            | rounded(31.5 + 31.5 * yellowBlue.dc) << 6
            | rounded(31.5 + 31.5 * redGreen.dc) << 12
            | rounded(31 * luminance.scale) << 18
            | (hasAlpha ? 1 << 23 : 0)
        let header16 = (isLandscape ? ly : lx)
            | rounded(63 * yellowBlue.scale) << 3
            | rounded(63 * redGreen.scale) << 9
            | (isLandscape ? 1 << 15 : 0)
        var hash: [UInt8] = [UInt8(header24 & 255), UInt8(header24 >> 8 & 255), UInt8(header24 >> 16),
                             UInt8(header16 & 255), UInt8(header16 >> 8)]
        if hasAlpha { hash.append(UInt8(rounded(15 * opacity.dc) | rounded(15 * opacity.scale) << 4)) }
        let factors = luminance.ac + yellowBlue.ac + redGreen.ac + (hasAlpha ? opacity.ac : [])
        let start = hash.count
        hash += [UInt8](repeating: 0, count: (factors.count + 1) / 2)
        for (index, factor) in factors.enumerated() {
            hash[start + index / 2] |= UInt8(rounded(15 * factor)) << UInt8((index & 1) * 4)
        }
        return hash
    }

    struct Channel {
        var dc: Double
        var ac: [Double]
        var scale: Double
    }

    /// The DCT of one channel: the constant term and the varying ones
    /// (normalised to 0...1 by the largest), in the reference's order and
    /// arithmetic (known answers compare bytes).
    static func channel(_ values: [Double], nx: Int, ny: Int, width w: Int, height h: Int) -> Channel {
        var result = Channel(dc: 0, ac: [], scale: 0)
        // The cosines once per row and column frequency (the same values the
        // reference computes in its loops: the sums are bit-identical).
        let cosX = (0..<nx).map { cx in (0..<w).map { x in cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) } }
        let cosY = (0..<ny).map { cy in (0..<h).map { y in cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5)) } }
        for cy in 0..<ny {
            var cx = 0
            while cx * ny < nx * (ny - cy) {
                var f = 0.0
                values.withUnsafeBufferPointer { v in
                    cosX[cx].withUnsafeBufferPointer { fx in
                        cosY[cy].withUnsafeBufferPointer { fys in
                            for y in 0..<h {
                                let fy = fys[y], row = y * w
                                for x in 0..<w { f += v[x + row] * fx[x] * fy }
                            }
                        }
                    }
                }
                f /= Double(w * h)
                if cx > 0 || cy > 0 {
                    result.ac.append(f)
                    result.scale = max(result.scale, abs(f))
                } else {
                    result.dc = f
                }
                cx += 1
            }
        }
        if result.scale > 0 {
            for i in result.ac.indices { result.ac[i] = 0.5 + 0.5 / result.scale * result.ac[i] }
        }
        return result
    }

    /// Rounds half to even, as the Python port the known answers come from
    /// (the JavaScript reference rounds half up; ties are rare and change
    /// one 4-bit term by one step).
    static func rounded(_ value: Double) -> Int { Int(value.rounded(.toNearestOrEven)) }
}

extension ThumbHash {
    /// A hash that does not hold what its header announces.
    package struct Malformed: Error, Equatable, Sendable {
        package var length: Int
    }

    /// The image a hash stands for, at most `baseSize` pixels on its longer
    /// side (its aspect ratio is the encoded one's, approximately), as
    /// 8-bit RGBA rows; P and Q terms boosted by `saturationBoost` as the
    /// reference does (1.25).
    package static func decode(_ hash: [UInt8], baseSize: Int = 32,
                               saturationBoost: Double = 1.25) throws(Malformed) -> (width: Int, height: Int, rgba: [UInt8]) {
        guard hash.count >= 5 else { throw Malformed(length: hash.count) }
        let header24 = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
        let header16 = Int(hash[3]) | Int(hash[4]) << 8
        let lDC = Double(header24 & 63) / 63
        let pDC = Double(header24 >> 6 & 63) / 31.5 - 1
        let qDC = Double(header24 >> 12 & 63) / 31.5 - 1
        let lScale = Double(header24 >> 18 & 31) / 31
        let hasAlpha = header24 >> 23 != 0
        let pScale = Double(header16 >> 3 & 63) / 63
        let qScale = Double(header16 >> 9 & 63) / 63
        let isLandscape = header16 >> 15 != 0
        let lCount = header16 & 7
        let lMax = hasAlpha ? 5 : 7
        let lx = max(3, isLandscape ? lMax : lCount)
        let ly = max(3, isLandscape ? lCount : lMax)
        var aDC = 1.0, aScale = 1.0
        if hasAlpha {
            guard hash.count >= 6 else { throw Malformed(length: hash.count) }
            aDC = Double(hash[5] & 15) / 15
            aScale = Double(hash[5] >> 4) / 15
        }
        let start = hasAlpha ? 6 : 5
        var index = 0
        func terms(_ nx: Int, _ ny: Int, _ scale: Double) throws(Malformed) -> [Double] {
            var ac: [Double] = []
            for cy in 0..<ny {
                var cx = cy == 0 ? 1 : 0
                while cx * ny < nx * (ny - cy) {
                    let at = start + index / 2
                    guard at < hash.count else { throw Malformed(length: hash.count) }
                    ac.append((Double(hash[at] >> UInt8((index & 1) * 4) & 15) / 7.5 - 1) * scale)
                    index += 1
                    cx += 1
                }
            }
            return ac
        }
        let lAC = try terms(lx, ly, lScale)
        let pAC = try terms(3, 3, pScale * saturationBoost)
        let qAC = try terms(3, 3, qScale * saturationBoost)
        let aAC = hasAlpha ? try terms(5, 5, aScale) : []

        let ratio = Double(lx) / Double(ly)
        let w = ratio > 1 ? baseSize : rounded(Double(baseSize) * ratio)
        let h = ratio > 1 ? rounded(Double(baseSize) / ratio) : baseSize
        var rgba = [UInt8](repeating: 0, count: w * h * 4)
        var fx = [Double](repeating: 0, count: max(lx, hasAlpha ? 5 : 3))
        var fy = [Double](repeating: 0, count: max(ly, hasAlpha ? 5 : 3))
        var out = 0
        for y in 0..<h {
            for x in 0..<w {
                for cx in fx.indices { fx[cx] = cos(Double.pi / Double(w) * (Double(x) + 0.5) * Double(cx)) }
                for cy in fy.indices { fy[cy] = cos(Double.pi / Double(h) * (Double(y) + 0.5) * Double(cy)) }
                var l = lDC
                var j = 0
                for cy in 0..<ly {
                    var cx = cy == 0 ? 1 : 0
                    let fy2 = fy[cy] * 2
                    while cx * ly < lx * (ly - cy) {
                        l += lAC[j] * fx[cx] * fy2
                        j += 1
                        cx += 1
                    }
                }
                var p = pDC, q = qDC
                j = 0
                for cy in 0..<3 {
                    var cx = cy == 0 ? 1 : 0
                    let fy2 = fy[cy] * 2
                    while cx < 3 - cy {
                        let f = fx[cx] * fy2
                        p += pAC[j] * f
                        q += qAC[j] * f
                        j += 1
                        cx += 1
                    }
                }
                var a = aDC
                if hasAlpha {
                    j = 0
                    for cy in 0..<5 {
                        var cx = cy == 0 ? 1 : 0
                        let fy2 = fy[cy] * 2
                        while cx < 5 - cy {
                            a += aAC[j] * fx[cx] * fy2
                            j += 1
                            cx += 1
                        }
                    }
                }
                let b = l - 2.0 / 3.0 * p
                let r = (3.0 * l - b + q) / 2.0
                let g = r - q
                for value in [r, g, b, a] {
                    rgba[out] = UInt8(rounded(max(0, min(1, value) * 255)))
                    out += 1
                }
            }
        }
        return (w, h, rgba)
    }
}
