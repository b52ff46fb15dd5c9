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

    /// Tag 0x0112 of IFD0 in a TIFF structure (either byte order).
    static func orientation(tiff: ArraySlice<UInt8>) -> Int? {
        let t = Array(tiff)
        guard t.count >= 8 else { return nil }
        let little: Bool
        switch (t[0], t[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= t.count else { return nil }
            return little ? Int(t[at]) | Int(t[at + 1]) << 8 : Int(t[at]) << 8 | Int(t[at + 1])
        }
        func u32(_ at: Int) -> Int? {
            guard let a = u16(at), let b = u16(at + 2) else { return nil }
            return little ? a | b << 16 : a << 16 | b
        }
        guard let ifd = u32(4), let count = u16(ifd) else { return nil }
        for entry in 0..<min(count, 512) {
            let at = ifd + 2 + entry * 12
            guard let tag = u16(at) else { return nil }
            if tag == 0x0112 {
                guard let value = u16(at + 8), (1...8).contains(value) else { return nil }
                return value
            }
        }
        return nil
    }
}
