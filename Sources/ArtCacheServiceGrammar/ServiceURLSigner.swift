import Crypto
import ArtCacheCore
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
        signature(forBody: Array(rest.utf8))
    }

    /// Whether `signature` signs `rest` under any of the keys (compared in constant time).
    public func isValid(signature: String, for rest: String) -> Bool {
        isValid(signature: signature, forBody: Array(rest.utf8))
    }

    /// The signature of a request body (`POST /v1/manifest`'s
    /// `X-ArtCache-Signature`): base64url(HMAC-SHA256(key, salt + body))
    /// with the first key; nil without keys.
    /// (A path's signature is this over the path after the signature.)
    public func signature(forBody body: [UInt8]) -> String? {
        guard let key = keys.first else { return nil }
        return Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: salt + body, using: SymmetricKey(data: key))))
    }

    /// Whether `signature` signs `body` under any of the keys (every key
    /// tried: compared in constant time).
    ///
    /// Exactly one spelling of a signature is valid: the one ``signature(forBody:)``
    /// writes (base64url, no padding). `sig=` or `sig==` would name the same
    /// bytes, but a front cache keyed by the URI would store each spelling
    /// apart, so they are refused.
    public func isValid(signature: String, forBody body: [UInt8]) -> Bool {
        guard let mac = Base64URL.decode(signature), mac.count == SHA256.byteCount,
              Base64URL.encode(mac) == signature else { return false }
        let message = salt + body
        var valid = false
        for key in keys where HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: message, using: SymmetricKey(data: key)) {
            valid = true
        }
        return valid
    }

    /// The signature of a whole request (`POST /v1/manifest`'s
    /// `X-ArtCache-Signature`): ``signature(forBody:)`` over
    /// ``requestText(method:path:query:expires:body:)``, so it covers all
    /// that changes the answer — the method, the path, the query as sent
    /// (`sizes=`), the body — and its expiry (`X-ArtCache-Expires`, seconds
    /// since the epoch). Nil without keys.
    public func signature(method: String, path: String, query: String, expires: Int, body: [UInt8]) -> String? {
        signature(forBody: Self.requestText(method: method, path: path, query: query, expires: expires, body: body))
    }

    /// Whether `signature` signs that request under any of the keys.
    public func isValid(signature: String, method: String, path: String, query: String, expires: Int, body: [UInt8]) -> Bool {
        isValid(signature: signature, forBody: Self.requestText(method: method, path: path, query: query, expires: expires, body: body))
    }

    /// What a request's signature covers: `METHOD \n PATH \n QUERY \n
    /// EXPIRES \n` then the body's bytes. `query` is the request's query
    /// string as sent, without its `?` (empty when there is none);
    /// `expires` is decimal seconds since the epoch.
    public static func requestText(method: String, path: String, query: String, expires: Int, body: [UInt8]) -> [UInt8] {
        Array("\(method)\n\(path)\n\(query)\n\(expires)\n".utf8) + body
    }

    /// The service path of one image's size and placeholder:
    /// `/v1/info/{signature}/{source}`, signed as an image path with empty
    /// options (over `//{source}`).
    public func infoPath(for source: String) -> String {
        let encoded = Self.encodeSource(source)
        return "/v1/info/" + (signature(for: "//" + encoded) ?? Self.unsignedMarker) + "/" + encoded
    }

    /// The source URL as a path segment (base64url, no padding).
    public static func encodeSource(_ url: String) -> String { Base64URL.encode(Array(url.utf8)) }

    /// The source URL a segment names; nil when it is not base64url of
    /// UTF-8 text, written as ``encodeSource(_:)`` writes it (no padding: one
    /// spelling per source).
    public static func decodeSource(_ segment: String) -> String? {
        guard segment.utf8.last != UInt8(ascii: "="), let bytes = Base64URL.decode(segment) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// RFC 4648 §5 base64url without padding (padding is accepted when decoding),
/// on bytes: the service decodes two segments per request.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, c) in alphabet.enumerated() { table[Int(c)] = UInt8(index) }
        return table
    }()

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 2 < bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let n = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
            if rest == 2 { out.append(alphabet[Int(n >> 6 & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        while utf8.last == UInt8(ascii: "=") { utf8.removeLast() }
        guard utf8.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for c in utf8 {
            let value = values[Int(c)]
            guard value != 0xFF else { return nil }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero (one canonical spelling per byte string).
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
