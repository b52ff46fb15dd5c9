import Crypto
import Foundation

/// The identity of a stored item: SHA-256 of the normalized URL (originals) or
/// of the parent key and the variant's canonical spec (variants), as 64 hex digits.
public struct CacheKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public let hex: String

    public init(hex: String) { self.hex = hex }

    /// The key of an original, from its normalized URL.
    package init(normalizedURL: NormalizedURL) {
        self.hex = CacheKey.sha256Hex(Data(normalizedURL.string.utf8))
    }

    /// The key the original at `url` is stored under (one key for every
    /// spelling of one resource); `.invalidURL` for anything but an
    /// absolute http(s) URL with a host.
    public init(url: String) throws(ArtCacheError) {
        self.init(normalizedURL: try NormalizedURL(url))
    }

    /// The key of a variant of `parent` made with `spec` (a canonical spec string).
    package init(parent: CacheKey, spec: String) {
        self.hex = CacheKey.sha256Hex(Data("variant:\(parent.hex):\(spec)".utf8))
    }

    public var description: String { hex }

    package static func sha256Hex(_ data: Data) -> String {
        hex(SHA256.hash(data: data))
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// Lowercase hex of a byte sequence (String(format:) per byte is ~50× slower).
    package static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
