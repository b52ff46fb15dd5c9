import Crypto
import Foundation

/// The identity of a stored item: SHA-256 of the normalized URL (originals) or
/// of the parent key and the variant's canonical spec (variants), as 64 hex digits.
public struct CacheKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public let hex: String

    public init(hex: String) { self.hex = hex }

    /// The key of an original, from its normalized URL.
    public init(normalizedURL: NormalizedURL) {
        self.hex = CacheKey.sha256Hex(Data(normalizedURL.string.utf8))
    }

    /// The key of a variant of `parent` made with `spec` (a canonical spec string).
    public init(parent: CacheKey, spec: String) {
        self.hex = CacheKey.sha256Hex(Data("variant:\(parent.hex):\(spec)".utf8))
    }

    public var description: String { hex }

    static func sha256Hex(_ data: Data) -> String {
        hex(SHA256.hash(data: data))
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// Lowercase hex of a byte sequence (String(format:) per byte is ~50× slower).
    static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A URL in the one spelling the cache keys on: lowercase scheme and host,
/// default port dropped, fragment dropped, empty path as `/`, query kept as sent.
public struct NormalizedURL: Hashable, Sendable, CustomStringConvertible {
    public let string: String
    /// Lowercased host, without brackets for IPv6.
    public let host: String
    public let scheme: String

    public var key: CacheKey { CacheKey(normalizedURL: self) }
    public var description: String { string }

    /// Normalizes `text`; throws `.invalidURL` for anything but an absolute
    /// http or https URL with a host.
    public init(_ text: String) throws(StoreError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw StoreError(.invalidURL, "empty URL") }
        guard let components = URLComponents(string: trimmed) else {
            throw StoreError(.invalidURL, "not a valid URL: \(trimmed)")
        }
        guard let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw StoreError(.invalidURL, "only http and https URLs can be cached: \(trimmed)")
        }
        guard var host = components.percentEncodedHost?.lowercased(), !host.isEmpty else {
            throw StoreError(.invalidURL, "URL has no host: \(trimmed)")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var result = "\(scheme)://"
        if let user = components.percentEncodedUser {
            result += user
            if let password = components.percentEncodedPassword { result += ":\(password)" }
            result += "@"
        }
        result += host.contains(":") ? "[\(host)]" : host
        if let port = components.port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) {
            result += ":\(port)"
        }
        let path = components.percentEncodedPath
        result += path.isEmpty ? "/" : path
        if let query = components.percentEncodedQuery { result += "?\(query)" }
        self.string = result
        self.host = host
        self.scheme = scheme
    }
}
