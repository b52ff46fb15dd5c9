import Foundation

/// Image dimensions of the single-frame formats, read from their headers
/// without a decoder (the renderer's fast path checks its limits from these
/// and hands the bytes straight to `vips_thumbnail_buffer`).
extension Sniffer {
    /// The largest side the header readers report: a 32-bit side (PNG, HEIF
    /// `ispe`) above it is reported as this. Any pixel limit refuses such an
    /// image all the same, and `width * height` stays within `Int` (the
    /// renderer multiplies them; 2^32 × 2^32 would trap).
    static let maxReportedSide = 1 << 31

    /// Width and height of a JPEG (its first SOF marker) or PNG (IHDR), nil
    /// for anything else or a header that cannot be read. Sides are at most
    /// ``maxReportedSide``.
    package static func extent(_ data: Data, format: SniffedFormat) -> (width: Int, height: Int)? {
        data.withUnsafeBytes { raw -> (Int, Int)? in
            let bytes = raw.bindMemory(to: UInt8.self)
            func be16(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }
            func be32(_ at: Int) -> Int { be16(at) << 16 | be16(at + 2) }
            switch format {
            case .png:
                // signature(8) length(4) "IHDR"(4) width(4) height(4)
                guard bytes.count >= 24, bytes[12] == 0x49, bytes[13] == 0x48, bytes[14] == 0x44, bytes[15] == 0x52 else { return nil }
                return (min(be32(16), maxReportedSide), min(be32(20), maxReportedSide))
            case .jpeg:
                var index = 2
                while index + 9 < bytes.count {
                    guard bytes[index] == 0xFF else { return nil }
                    let marker = bytes[index + 1]
                    if marker == 0xFF { index += 1; continue }                       // fill byte
                    if marker == 0x01 || (0xD0...0xD7).contains(marker) { index += 2; continue }  // no length
                    let length = be16(index + 2)
                    guard length >= 2 else { return nil }
                    // SOF0...SOF15 except DHT (C4), JPG (C8) and DAC (CC): precision(1) height(2) width(2)
                    if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                        return (be16(index + 7), be16(index + 5))
                    }
                    if marker == 0xDA { return nil }                                 // scan before any SOF
                    index += 2 + length
                }
                return nil
            default:
                return nil
            }
        }
    }
}
