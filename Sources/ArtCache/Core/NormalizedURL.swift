import Foundation

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
    /// http or https URL with a host and without credentials.
    public init(_ text: String) throws(ArtCacheError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw ArtCacheError(.invalidURL, "empty URL") }
        guard let components = URLComponents(string: trimmed) else {
            throw ArtCacheError(.invalidURL, "not a valid URL: \(trimmed)")
        }
        guard let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw ArtCacheError(.invalidURL, "only http and https URLs can be cached: \(trimmed)")
        }
        guard var host = components.percentEncodedHost?.lowercased(), !host.isEmpty else {
            throw ArtCacheError(.invalidURL, "URL has no host: \(trimmed)")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard components.percentEncodedUser == nil, components.percentEncodedPassword == nil else {
            throw ArtCacheError(.invalidURL, "URLs with credentials (user:password@) are refused: \(scheme)://…@\(host)")
        }
        var result = "\(scheme)://"
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
