import Crypto
import Foundation

/// Builds and checks thumbnail-service paths:
/// `/{signature}/{options}/{base64url source URL}`.
///
/// The signature is HMAC-SHA256, keyed with the first key, over the salt
/// followed by the path after the signature (`/{options}/{source}`), written
/// base64url without padding. Every key verifies, so a new key can be put
/// first while URLs signed with the old one keep working (rotation without
/// downtime). With no keys the signature segment is `unsafe`, which only a
/// service configured with `allow_unsigned` on loopback accepts.
///
/// ```swift
/// let signer = ServiceURLSigner(settings: configuration.service)
/// let path = signer.path(for: "https://is1-ssl.mzstatic.com/a.jpg",
///                        options: ThumbnailOptions(size: .init(100), fit: .cover))
/// // "/Xy…/100x100,fit=cover/aHR0cHM6Ly9pczEtc3NsLm16c3RhdGljLmNvbS9hLmpwZw"
/// ```
public struct ServiceURLSigner: Sendable {
    /// The signature segment of an unsigned path.
    public static let unsignedMarker = "unsafe"

    private let keys: [[UInt8]]
    private let salt: [UInt8]

    /// `keys`: raw key bytes, the first one signs; `salt`: raw bytes prefixed to every signed text.
    public init(keys: [[UInt8]], salt: [UInt8] = []) {
        self.keys = keys
        self.salt = salt
    }

    /// The keys and salt of `[service]`.
    public init(settings: ServiceSettings) {
        self.init(keys: settings.keys, salt: settings.salt)
    }

    /// True when paths are signed (at least one key).
    public var signs: Bool { !keys.isEmpty }

    /// The path to request for `source` with `options` (canonical form).
    public func path(for source: String, options: ThumbnailOptions = .original) -> String {
        let rest = "/\(options)/\(Self.encodeSource(source))"
        return "/" + (signature(for: rest) ?? Self.unsignedMarker) + rest
    }

    /// The signature of `rest` (`/{options}/{source}`) with the first key; nil without keys.
    public func signature(for rest: String) -> String? {
        guard let key = keys.first else { return nil }
        let code = HMAC<SHA256>.authenticationCode(for: salt + Array(rest.utf8), using: SymmetricKey(data: key))
        return Base64URL.encode(Array(code))
    }

    /// Whether `signature` signs `rest` under any of the keys (compared in constant time).
    public func isValid(signature: String, for rest: String) -> Bool {
        guard let mac = Base64URL.decode(signature), mac.count == SHA256.byteCount else { return false }
        let message = salt + Array(rest.utf8)
        var valid = false
        for key in keys where HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: message,
                                                                                  using: SymmetricKey(data: key)) {
            valid = true
        }
        return valid
    }

    /// The source URL as a path segment (base64url, no padding).
    public static func encodeSource(_ url: String) -> String { Base64URL.encode(Array(url.utf8)) }

    /// The source URL a segment names; nil when it is not base64url of UTF-8 text.
    public static func decodeSource(_ segment: String) -> String? {
        guard let bytes = Base64URL.decode(segment) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// RFC 4648 §5 base64url without padding (padding is accepted when decoding).
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0.isBase64URL || $0 == UInt8(ascii: "=") }) else { return nil }
        var standard = text.replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        guard standard.count % 4 != 1 else { return nil }
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map { Array($0) }
    }
}

private extension UInt8 {
    var isBase64URL: Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || self == UInt8(ascii: "-") || self == UInt8(ascii: "_")
    }
}
