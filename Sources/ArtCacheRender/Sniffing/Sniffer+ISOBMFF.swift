import Foundation

/// HEIF-family detection from the ISO-BMFF `ftyp` box.
extension Sniffer {
    static let avifBrands: Set<String> = ["avif", "avis"]
    static let heicBrands: Set<String> = ["heic", "heix", "heim", "heis", "hevc", "hevx"]
    static let heifBrands: Set<String> = ["mif1", "msf1", "heif"]

    /// The major brand and the compatible brands of a leading `ftyp` box.
    static func ftypBrands(_ bytes: SniffBytes) -> (major: String, compatible: [String])? {
        guard bytes.has(ascii: "ftyp", at: 4), let size32 = bytes.be32(0) else { return nil }
        var header = 8
        var boxSize = size32
        if size32 == 1 {
            // 64-bit largesize follows the type.
            guard let high = bytes.be32(8), let low = bytes.be32(12), high == 0 else { return nil }
            header = 16
            boxSize = low
        } else if size32 == 0 {
            boxSize = bytes.count // box extends to the end of the file
        }
        // major brand (4) + minor version (4) must fit in the box.
        guard boxSize >= header + 8, let major = bytes.fourCC(header) else { return nil }
        let end = min(boxSize, bytes.count)
        var compatible: [String] = []
        var offset = header + 8
        while offset + 4 <= end, compatible.count < 256, let brand = bytes.fourCC(offset) {
            compatible.append(brand)
            offset += 4
        }
        return (major, compatible)
    }

    /// AVIF, HEIC or HEIF from the brands; nil for other ISO-BMFF files
    /// (MP4, QuickTime, …).
    static func sniffISOBMFF(_ bytes: SniffBytes) -> SniffResult? {
        guard let (major, compatible) = ftypBrands(bytes) else { return nil }
        let format: SniffedFormat
        if avifBrands.contains(major) {
            format = .avif
        } else if heicBrands.contains(major) {
            format = .heic
        } else if compatible.contains(where: avifBrands.contains) {
            format = .avif
        } else if compatible.contains(where: heicBrands.contains) {
            format = .heic
        } else if heifBrands.contains(major) || compatible.contains(where: heifBrands.contains) {
            format = .heif
        } else {
            return nil
        }
        // An image sequence: `avis` as the major brand, or listed by a file
        // whose major brand is not the still-image `avif`.
        let animated = format == .avif && (major == "avis" || (major != "avif" && compatible.contains("avis")))
        return SniffResult(format: format, isAnimated: animated)
    }
}

extension Sniffer {
    /// The largest image extent declared by the `ispe` properties of a
    /// HEIF-family file (HEIC, HEIF, AVIF), read from the bytes without a
    /// decoder: lets the renderer refuse a bomb from its header even where
    /// libheif's own limits would reject it with nothing but text. Sides are
    /// at most ``maxReportedSide``, so their product fits in an `Int`.
    package static func heifExtent(_ data: Data) -> (width: Int, height: Int)? {
        let tag = Array("ispe".utf8)
        return data.prefix(1 << 20).withUnsafeBytes { raw -> (Int, Int)? in
            let bytes = raw.bindMemory(to: UInt8.self)
            func be32(_ at: Int) -> Int {
                Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            }
            var best: (Int, Int)?
            var index = 4
            // box: size(4) "ispe"(4) version+flags(4) width(4) height(4)
            while index + 16 <= bytes.count {
                if bytes[index] == tag[0], bytes[index + 1] == tag[1], bytes[index + 2] == tag[2], bytes[index + 3] == tag[3],
                   be32(index - 4) >= 20 {
                    let extent = (min(be32(index + 8), maxReportedSide), min(be32(index + 12), maxReportedSide))
                    if best.map({ $0.0 * $0.1 < extent.0 * extent.1 }) ?? true { best = extent }
                    index += 16
                } else {
                    index += 1
                }
            }
            return best
        }
    }
}
