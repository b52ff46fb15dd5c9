import Foundation

/// Magic-byte checks for the binary formats. Magic bytes always win over any
/// text that happens to be inside a file.
extension Sniffer {
    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    static let jxlContainerSignature: [UInt8] = [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]
    static let bmpDIBHeaderSizes: Set<Int> = [12, 40, 52, 56, 64, 108, 124]

    /// Returns a result when the bytes carry the magic of a binary format we
    /// know, nil otherwise (text, gzip or unknown).
    static func sniffBinary(prefix: SniffBytes, whole: SniffBytes) -> SniffResult? {
        if prefix.has([0xFF, 0xD8, 0xFF]) {
            return SniffResult(format: .jpeg) // includes MPO, which is JPEG + MPF
        }
        if prefix.has(pngSignature) {
            return sniffPNG(prefix)
        }
        if prefix.has(ascii: "GIF87a") || prefix.has(ascii: "GIF89a") {
            let scan = whole.prefix(gifScanLimit)
            return SniffResult(format: .gif, isAnimated: gifFrameCount(scan, stopAt: 2) >= 2)
        }
        if prefix.has(ascii: "RIFF"), prefix.has(ascii: "WEBP", at: 8), let result = sniffWebP(prefix) {
            return result
        }
        if prefix.has(jxlContainerSignature) || prefix.has([0xFF, 0x0A]) {
            return SniffResult(format: .jxl)
        }
        if prefix.has(ascii: "ftyp", at: 4), let result = sniffISOBMFF(prefix) {
            return result
        }
        if prefix.has(ascii: "8BPS") {
            return SniffResult(format: .psd)
        }
        if prefix.has(ascii: "qoif") {
            return SniffResult(format: .qoi)
        }
        if prefix.has([0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) || prefix.has([0xFF, 0x4F, 0xFF, 0x51]) {
            return SniffResult(format: .jp2)
        }
        if prefix.has(ascii: "%PDF-") {
            return SniffResult(format: .pdf)
        }
        if isTIFF(prefix) {
            return SniffResult(format: .tiff)
        }
        if isBMP(prefix) {
            return SniffResult(format: .bmp)
        }
        if isICO(prefix) {
            return SniffResult(format: .ico)
        }
        if isTGA(prefix: prefix, whole: whole) {
            return SniffResult(format: .tga)
        }
        return nil
    }

    // MARK: TGA

    /// TGA has no magic number: a v2 file ends with the footer
    /// `TRUEVISION-XFILE.\0`; a v1 file is recognised only by a strict check
    /// of its 18-byte header (no colour map, a true-colour or grey image
    /// type, a usual depth, and as many bytes as an uncompressed image needs).
    static func isTGA(prefix: SniffBytes, whole: SniffBytes) -> Bool {
        let footer = Array("TRUEVISION-XFILE.".utf8) + [0]
        if whole.count >= 18 + 26, whole.has(footer, at: whole.count - footer.count) { return true }
        guard prefix.count >= 18 else { return false }
        let idLength = Int(prefix[0]), colourMapType = prefix[1], imageType = prefix[2]
        let mapBytes = (0..<5).map { prefix[3 + $0] }
        let width = Int(prefix[12]) | Int(prefix[13]) << 8, height = Int(prefix[14]) | Int(prefix[15]) << 8
        let depth = Int(prefix[16]), descriptor = prefix[17]
        guard colourMapType == 0, mapBytes.allSatisfy({ $0 == 0 }), [2, 3].contains(imageType),
              [8, 16, 24, 32].contains(depth), width > 0, height > 0, descriptor & 0xC0 == 0 else { return false }
        return whole.count >= 18 + idLength + width * height * depth / 8
    }

    // MARK: PNG

    /// PNG, or APNG when an `acTL` chunk appears before the first `IDAT`.
    static func sniffPNG(_ bytes: SniffBytes) -> SniffResult {
        var offset = 8
        while let length = bytes.be32(offset), let type = bytes.fourCC(offset + 4) {
            if type == "acTL" { return SniffResult(format: .apng, isAnimated: true) }
            if type == "IDAT" || type == "IEND" { break }
            // length + type + data + CRC; a length over 2^31 is invalid anyway.
            guard length <= 0x7FFF_FFFF else { break }
            offset += 12 + length
        }
        return SniffResult(format: .png)
    }

    // MARK: GIF

    /// Counts image descriptors by walking the GIF block structure, stopping
    /// at `stopAt` frames, at the trailer, at the end of `bytes` or at the
    /// first byte that makes no sense.
    static func gifFrameCount(_ bytes: SniffBytes, stopAt: Int) -> Int {
        guard let packed = bytes.u8(10) else { return 0 }
        var offset = 13
        if packed & 0x80 != 0 {
            offset += 3 << ((packed & 0x07) + 1)
        }
        var frames = 0
        while frames < stopAt, let introducer = bytes.u8(offset) {
            switch introducer {
            case 0x2C: // image descriptor
                frames += 1
                guard frames < stopAt, let flags = bytes.u8(offset + 9) else { return frames }
                offset += 10
                if flags & 0x80 != 0 {
                    offset += 3 << ((flags & 0x07) + 1)
                }
                offset += 1 // LZW minimum code size
                guard let next = skipGIFSubBlocks(bytes, from: offset) else { return frames }
                offset = next
            case 0x21: // extension: label, then data sub-blocks
                guard let next = skipGIFSubBlocks(bytes, from: offset + 2) else { return frames }
                offset = next
            default: // 0x3B trailer, or garbage
                return frames
            }
        }
        return frames
    }

    /// Skips a chain of data sub-blocks; returns the offset after the
    /// terminator, or nil when the chain runs off the end of `bytes`.
    static func skipGIFSubBlocks(_ bytes: SniffBytes, from start: Int) -> Int? {
        var offset = start
        while let size = bytes.u8(offset) {
            offset += 1
            if size == 0 { return offset }
            offset += size
        }
        return nil
    }

    // MARK: WebP

    /// WebP with a VP8, VP8L or VP8X first chunk; nil for other RIFF bodies.
    static func sniffWebP(_ bytes: SniffBytes) -> SniffResult? {
        guard let first = bytes.fourCC(12), ["VP8 ", "VP8L", "VP8X"].contains(first) else { return nil }
        if first == "VP8X", let flags = bytes.u8(20), flags & 0x02 != 0 {
            return SniffResult(format: .webp, isAnimated: true)
        }
        var offset = 12
        while let type = bytes.fourCC(offset), let size = bytes.le32(offset + 4) {
            if type == "ANIM" || type == "ANMF" { return SniffResult(format: .webp, isAnimated: true) }
            offset += 8 + size + (size & 1)
        }
        return SniffResult(format: .webp)
    }

    // MARK: TIFF, BMP, ICO

    /// Classic TIFF (`II*\0`, `MM\0*`) or BigTIFF (`II+\0`, `MM\0+`).
    static func isTIFF(_ bytes: SniffBytes) -> Bool {
        bytes.has([0x49, 0x49, 0x2A, 0x00]) || bytes.has([0x4D, 0x4D, 0x00, 0x2A])
            || bytes.has([0x49, 0x49, 0x2B, 0x00]) || bytes.has([0x4D, 0x4D, 0x00, 0x2B])
    }

    /// "BM" followed by a known DIB header size and a pixel-data offset past
    /// the headers.
    static func isBMP(_ bytes: SniffBytes) -> Bool {
        guard bytes.has(ascii: "BM"), let dibSize = bytes.le32(14), bmpDIBHeaderSizes.contains(dibSize),
              let dataOffset = bytes.le32(10), let fileSize = bytes.le32(2) else { return false }
        guard dataOffset >= 14 + dibSize else { return false }
        // Some writers leave the file size at 0; otherwise it must cover the headers.
        return fileSize == 0 || fileSize >= 14 + dibSize
    }

    /// ICO (`00 00 01 00`) or CUR (`00 00 02 00`) with 1...255 entries and a
    /// plausible first directory entry.
    static func isICO(_ bytes: SniffBytes) -> Bool {
        guard bytes.has([0x00, 0x00, 0x01, 0x00]) || bytes.has([0x00, 0x00, 0x02, 0x00]),
              let count = bytes.le16(4), (1...255).contains(count) else { return false }
        let entry = 6
        guard let reserved = bytes.u8(entry + 3), let size = bytes.le32(entry + 8),
              let offset = bytes.le32(entry + 12) else { return false }
        return (reserved == 0 || reserved == 0xFF) && size > 0 && offset >= 6 + 16 * count
    }
}
