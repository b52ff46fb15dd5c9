import Foundation

/// Writes small TIFFs byte by byte (classic or BigTIFF, either byte order):
/// the variants libvips cannot write itself (12-bit samples, tiled separate
/// planes, old-style JPEG, other compressions) for the tests of
/// `TIFFDirectory` and the renderer's refusals.
struct TIFFBuilder {
    enum Value {
        case shorts([Int])
        case longs([Int])
        /// The offsets of these blobs, in the order given.
        case offsets([String])
    }

    var bigEndian = false
    var bigTIFF = false
    var entries: [(tag: Int, value: Value)] = []
    var blobs: [(name: String, data: Data)] = []

    mutating func set(_ tag: Int, _ value: Value) { entries.append((tag, value)) }

    mutating func blob(_ name: String, _ data: Data) { blobs.append((name, data)) }

    func bytes(_ value: Int, _ size: Int) -> Data {
        let raw = (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        return Data(bigEndian ? raw.reversed() : raw)
    }

    /// Header, then the blobs and the values that do not fit an entry, then
    /// the one directory (tags sorted, as the format asks).
    func build() -> Data {
        let header = bigTIFF ? 16 : 8
        var body = Data()
        var offsets: [String: Int] = [:]
        for (name, data) in blobs {
            offsets[name] = header + body.count
            body += data
            if body.count % 2 == 1 { body.append(0) }
        }
        let sorted = entries.sorted { $0.tag < $1.tag }
        let valueSize = bigTIFF ? 8 : 4
        var directory = bytes(sorted.count, bigTIFF ? 8 : 2)
        for (tag, value) in sorted {
            let (type, width, values): (Int, Int, [Int]) = switch value {
            case .shorts(let v): (3, 2, v)
            case .longs(let v): (4, 4, v)
            case .offsets(let names): bigTIFF ? (16, 8, names.map { offsets[$0]! }) : (4, 4, names.map { offsets[$0]! })
            }
            var raw = Data()
            for v in values { raw += bytes(v, width) }
            directory += bytes(tag, 2) + bytes(type, 2) + bytes(values.count, valueSize)
            if raw.count <= valueSize {
                directory += raw + Data(count: valueSize - raw.count)
            } else {
                directory += bytes(header + body.count, valueSize)
                body += raw
                if body.count % 2 == 1 { body.append(0) }
            }
        }
        directory += bytes(0, valueSize)
        let first = header + body.count
        var out = Data(bigEndian ? "MM".utf8 : "II".utf8)
        if bigTIFF {
            out += bytes(43, 2) + bytes(8, 2) + bytes(0, 2) + bytes(first, 8)
        } else {
            out += bytes(42, 2) + bytes(first, 4)
        }
        return out + body + directory
    }

    /// A `width` x `height` image of `samples` samples of `bits` bits in
    /// strips (one per image) or one tile, rows packed MSB first as TIFF does.
    static func image(width: Int = 16, height: Int = 8, samples: Int = 3, bits: Int = 8, photometric: Int = 2,
                      compression: Int = 1, sampleFormat: Int? = nil, planar: Int = 1, tiled: Bool = false,
                      extra: [(Int, Value)] = []) -> TIFFBuilder {
        var tiff = TIFFBuilder()
        tiff.set(256, .shorts([width]))
        tiff.set(257, .shorts([height]))
        tiff.set(258, .shorts(Array(repeating: bits, count: samples)))
        tiff.set(259, .shorts([compression]))
        tiff.set(262, .shorts([photometric]))
        tiff.set(277, .shorts([samples]))
        tiff.set(284, .shorts([planar]))
        if let sampleFormat { tiff.set(339, .shorts(Array(repeating: sampleFormat, count: samples))) }
        let (w, h) = tiled ? (16, 16) : (width, height)
        let planes = planar == 2 ? samples : 1
        let perPlane = planar == 2 ? 1 : samples
        var names: [String] = []
        var counts: [Int] = []
        for plane in 0..<planes {
            var data = Data()
            for y in 0..<h {
                var bitsLeft = 0, byte = 0
                for x in 0..<w {
                    for s in 0..<perPlane {
                        let value = (x * 37 + y * 11 + (s + plane) * 53) & ((1 << min(bits, 30)) - 1)
                        for bit in stride(from: bits - 1, through: 0, by: -1) {
                            byte = byte << 1 | (bit < 30 ? (value >> bit) & 1 : 0)
                            bitsLeft += 1
                            if bitsLeft == 8 { data.append(UInt8(byte)); bitsLeft = 0; byte = 0 }
                        }
                    }
                }
                if bitsLeft > 0 { data.append(UInt8(byte << (8 - bitsLeft))) }
            }
            names.append("p\(plane)")
            counts.append(data.count)
            tiff.blob("p\(plane)", data)
        }
        if tiled {
            tiff.set(322, .shorts([16]))
            tiff.set(323, .shorts([16]))
            tiff.set(324, .offsets(names))
            tiff.set(325, .longs(counts))
        } else {
            tiff.set(273, .offsets(names))
            tiff.set(278, .shorts([height]))
            tiff.set(279, .longs(counts))
        }
        for (tag, value) in extra { tiff.set(tag, value) }
        return tiff
    }
}
