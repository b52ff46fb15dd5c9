import Foundation

/// What the renderer reads from an embedded ICC profile, to decide whether
/// its colours must be converted: sources are rendered to sRGB (and the
/// output carries no profile, so sRGB is what a browser assumes). An sRGB
/// profile, or none, means the pixels are already right and are left
/// untouched (bit for bit as without colour management); any other RGB
/// profile (Display P3, Adobe RGB, jpegli's XYB, a camera's) is applied.
package enum ICCProfile {
    /// Whether the pixels of an image carrying `profile` must go through it
    /// to become sRGB: an RGB profile that does not describe itself as sRGB.
    /// (A grey or CMYK profile is not: grey is left as it is, and a CMYK
    /// decode has already been converted by libvips with its profile.)
    package static func needsConversion(_ profile: [UInt8]) -> Bool {
        isRGB(profile) && !describesSRGB(profile)
    }

    /// The profile's data colour space (header bytes 16..<20) is `RGB `.
    package static func isRGB(_ p: [UInt8]) -> Bool {
        p.count >= 132 && p[16..<20].elementsEqual("RGB ".utf8)
    }

    /// Whether an ICC profile's description (`desc`, v2 text or v4 `mluc`)
    /// names sRGB, and it is an RGB profile.
    package static func describesSRGB(_ p: [UInt8]) -> Bool {
        func u32(_ at: Int) -> Int? {
            guard at >= 0, at + 4 <= p.count else { return nil }
            return Int(p[at]) << 24 | Int(p[at + 1]) << 16 | Int(p[at + 2]) << 8 | Int(p[at + 3])
        }
        func tag(_ at: Int) -> String { String(decoding: p[at..<at + 4], as: UTF8.self) }
        guard p.count >= 132, tag(16) == "RGB ", let count = u32(128) else { return false }
        for entry in 0..<min(count, 256) {
            let at = 132 + entry * 12
            guard at + 12 <= p.count else { return false }
            guard tag(at) == "desc", let offset = u32(at + 4), let size = u32(at + 8),
                  offset >= 0, size >= 12, offset + size <= p.count else { continue }
            let text: String
            switch tag(offset) {
            case "desc":
                guard let length = u32(offset + 8), length <= size - 12 else { return false }
                text = String(decoding: p[(offset + 12)..<(offset + 12 + length)], as: UTF8.self)
            case "mluc":
                guard let records = u32(offset + 8), records >= 1, let length = u32(offset + 20),
                      let start = u32(offset + 24), offset + start + length <= offset + size else { return false }
                let utf16 = stride(from: offset + start, to: offset + start + length - 1, by: 2).map {
                    UInt16(p[$0]) << 8 | UInt16(p[$0 + 1])
                }
                text = String(decoding: utf16, as: UTF16.self)
            default:
                return false
            }
            return text.contains("sRGB")
        }
        return false
    }
}
