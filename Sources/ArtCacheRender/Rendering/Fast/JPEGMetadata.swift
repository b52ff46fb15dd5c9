import Foundation

/// What the fast path needs from a JPEG's markers before its scan: the EXIF
/// orientation, and whether an embedded ICC profile is anything but sRGB
/// (then libvips renders, converting colours; an sRGB profile changes nothing).
package struct JPEGMetadata: Sendable, Equatable {
    /// EXIF orientation 1...8 (1 when absent or unreadable).
    package var orientation = 1
    /// An ICC profile is embedded.
    package var hasProfile = false
    /// The embedded profile describes itself as sRGB.
    package var profileIsSRGB = false

    /// Read from the markers before the first scan; nil when the bytes are
    /// not a JPEG stream this reader can walk (libvips then decides).
    package init?(_ data: Data) {
        let parsed: JPEGMetadata?? = data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return .some(nil) }
            var result = JPEGMetadata()
            var chunks: [(Int, ArraySlice<UInt8>)] = []
            var index = 2
            while index + 4 <= bytes.count {
                guard bytes[index] == 0xFF else { return .some(nil) }
                let marker = bytes[index + 1]
                if marker == 0xFF { index += 1; continue }
                if marker == 0x01 || (0xD0...0xD7).contains(marker) { index += 2; continue }
                if marker == 0xDA || marker == 0xD9 { break }  // the scan: metadata comes before it
                let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
                let body = index + 4, end = index + 2 + length
                guard length >= 2, end <= bytes.count else { return .some(nil) }
                let segment = Array(bytes[body..<end])
                if marker == 0xE1, segment.starts(with: Array("Exif\0\0".utf8)) {
                    result.orientation = Self.orientation(tiff: segment.dropFirst(6)) ?? result.orientation
                } else if marker == 0xE2, segment.count > 14, segment.starts(with: Array("ICC_PROFILE\0".utf8)) {
                    chunks.append((Int(segment[12]), segment[14...]))
                }
                index = end
            }
            if !chunks.isEmpty {
                result.hasProfile = true
                let profile = chunks.sorted { $0.0 < $1.0 }.flatMap { $0.1 }
                result.profileIsSRGB = ICCProfile.describesSRGB(profile)
            }
            return .some(result)
        }
        guard let value = parsed ?? nil else { return nil }
        self = value
    }

    package init(orientation: Int = 1, hasProfile: Bool = false, profileIsSRGB: Bool = false) {
        self.orientation = orientation
        self.hasProfile = hasProfile
        self.profileIsSRGB = profileIsSRGB
    }

    /// Tag 0x0112 of IFD0 in a TIFF structure (either byte order; an EXIF
    /// block is a classic TIFF), read with ``TIFFStructure``.
    static func orientation(tiff: ArraySlice<UInt8>) -> Int? {
        tiff.withUnsafeBytes { raw -> Int? in
            guard let tiff = TIFFStructure(SniffBytes(raw)), !tiff.isBigTIFF, let count = tiff.entryCount else { return nil }
            for index in 0..<min(count, 512) {
                guard let entry = tiff.entry(index) else { return nil }
                if entry.tag == 0x0112 {
                    guard let value = tiff.uint(tiff.valueField(of: entry.offset), 2), (1...8).contains(value) else { return nil }
                    return value
                }
            }
            return nil
        }
    }
}
