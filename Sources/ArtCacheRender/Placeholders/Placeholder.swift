import CZlib
import Foundation

/// What a page shows in an image's box before the image arrives: its
/// dominant colour and its ThumbHash, computed once from a small decode
/// (at most 100×100, usually 32×32) of the original.
package struct Placeholder: Sendable, Hashable, Codable {
    /// `#rrggbb`.
    package var color: String
    /// The ThumbHash bytes.
    package var thumbHash: [UInt8]

    package init(color: String, thumbHash: [UInt8]) {
        self.color = color
        self.thumbHash = thumbHash
    }

    /// From 8-bit RGBA rows of at most 100×100 pixels.
    package init(width: Int, height: Int, rgba: [UInt8]) throws(ThumbHash.Failure) {
        thumbHash = try ThumbHash.encode(width: width, height: height, rgba: rgba)
        color = Self.hex(Self.dominantColor(rgba: rgba))
    }

    /// The ThumbHash as base64 (the manifest's `thumbhash`).
    package var thumbHashBase64: String { Data(thumbHash).base64EncodedString() }

    /// The ThumbHash decoded (32 px on the longer side) as a PNG data URL,
    /// for a CSS background or an `<img>` source.
    package func dataURL() throws(ThumbHash.Malformed) -> String {
        let image = try ThumbHash.decode(thumbHash)
        return "data:image/png;base64," + PNG.encode(width: image.width, height: image.height, rgba: image.rgba).base64EncodedString()
    }

    /// The most common colour, to 4 bits per channel (4096 buckets), of the
    /// pixels at least half opaque (all pixels when none is), returned as
    /// the mean of that bucket's pixels: a flat colour close to what the eye
    /// sees most of, not the muddy mean of the whole image.
    package static func dominantColor(rgba: [UInt8]) -> (r: UInt8, g: UInt8, b: UInt8) {
        let pixels = rgba.count / 4
        guard pixels > 0 else { return (0, 0, 0) }
        let opaqueOnly = stride(from: 3, to: pixels * 4, by: 4).contains { rgba[$0] >= 128 }
        var counts = [Int](repeating: 0, count: 4096)
        var sums = [(r: Int, g: Int, b: Int)](repeating: (0, 0, 0), count: 4096)
        for i in 0..<pixels where !opaqueOnly || rgba[i * 4 + 3] >= 128 {
            let (r, g, b) = (Int(rgba[i * 4]), Int(rgba[i * 4 + 1]), Int(rgba[i * 4 + 2]))
            let bucket = (r >> 4) << 8 | (g >> 4) << 4 | b >> 4
            counts[bucket] += 1
            sums[bucket].r += r
            sums[bucket].g += g
            sums[bucket].b += b
        }
        // The first of the most populous buckets (ties: the lowest index, so the answer is stable).
        var best = 0
        for bucket in counts.indices where counts[bucket] > counts[best] { best = bucket }
        let n = counts[best]
        return (UInt8((sums[best].r + n / 2) / n), UInt8((sums[best].g + n / 2) / n), UInt8((sums[best].b + n / 2) / n))
    }

    static func hex(_ color: (r: UInt8, g: UInt8, b: UInt8)) -> String {
        String(format: "#%02x%02x%02x", color.r, color.g, color.b)
    }
}

/// A minimal PNG writer for placeholders: 8-bit RGBA, one IDAT, no filter.
enum PNG {
    static func encode(width: Int, height: Int, rgba: [UInt8]) -> Data {
        precondition(rgba.count == width * height * 4, "rgba does not hold width × height pixels")
        var raw = [UInt8]()
        raw.reserveCapacity(height * (width * 4 + 1))
        for y in 0..<height {
            raw.append(0)  // filter: none
            raw += rgba[(y * width * 4)..<((y + 1) * width * 4)]
        }
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var header = Data()
        header.appendBigEndian(UInt32(width))
        header.appendBigEndian(UInt32(height))
        header.append(contentsOf: [8, 6, 0, 0, 0])  // 8 bits, RGBA, deflate, adaptive filters, no interlace
        chunk("IHDR", header, into: &png)
        chunk("IDAT", deflate(raw), into: &png)
        chunk("IEND", Data(), into: &png)
        return png
    }

    private static func deflate(_ bytes: [UInt8]) -> Data {
        var length = compressBound(uLong(bytes.count))
        var out = [UInt8](repeating: 0, count: Int(length))
        let status = bytes.withUnsafeBufferPointer { input in
            compress2(&out, &length, input.baseAddress, uLong(bytes.count), Z_BEST_COMPRESSION)
        }
        precondition(status == Z_OK, "zlib compress2 failed with a buffer of compressBound bytes")
        return Data(out.prefix(Int(length)))
    }

    private static func chunk(_ type: String, _ body: Data, into png: inout Data) {
        png.appendBigEndian(UInt32(body.count))
        let typed = Data(type.utf8) + body
        png.append(typed)
        let crc = typed.withUnsafeBytes { crc32(0, $0.bindMemory(to: UInt8.self).baseAddress, uInt(typed.count)) }
        png.appendBigEndian(UInt32(crc))
    }
}

extension Data {
    fileprivate mutating func appendBigEndian(_ value: UInt32) {
        append(contentsOf: [UInt8(value >> 24), UInt8(value >> 16 & 255), UInt8(value >> 8 & 255), UInt8(value & 255)])
    }
}
