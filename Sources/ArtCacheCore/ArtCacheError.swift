import Foundation

/// The one error type of artcache's public API: a stable code, a human
/// message, and the error it came from (a stage's own error, a file-system or
/// SQLite error), kept for logs and debugging.
public struct ArtCacheError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in terms a front can act on.
    public enum Code: Sendable, Hashable {
        /// Not an absolute http(s) URL with a host, or one artcache refuses (userinfo).
        case invalidURL
        /// The request itself is malformed (size, quality or format out of range).
        case invalidRequest
        /// The network failed before the origin answered; see the reason.
        case network(NetworkReason)
        /// The origin answered with a status that is not an image (404, 500...).
        case httpStatus(Int)
        /// The origin answered 2xx with something that is not an image (HTML, JSON...).
        case notAnImage
        /// The body, the source image or the output is over a configured limit.
        case tooLarge
        /// A format artcache does not decode or encode (or one that is not enabled).
        case unsupported
        /// Corrupt or truncated image data.
        case decode
        /// The cache could not read or write (disk, database).
        case storage
        /// The cache's disk is full: nothing was stored; purge or free space.
        case storageFull
        /// The cache was written by a newer artcache (a schema this build
        /// does not know): refused, and left as it is.
        case incompatibleSchema
        /// A `cacheOnly` request whose image is not in the cache.
        case notCached
        /// The request was cancelled (its task, or the pipeline closing).
        case cancelled
        /// The configuration is invalid.
        case configuration
    }

    /// Why the network failed.
    public enum NetworkReason: String, Sendable, Hashable, Codable {
        case dns
        case connect
        case timeout
        case tls
        /// The connection broke.
        case connection
        /// The body ended before its Content-Length.
        case truncated
        case tooManyRedirects = "too_many_redirects"
        /// The scheme is not allowed (plain http refused by configuration).
        case refusedScheme = "refused_scheme"
        /// The source resolves to a non-public address not allowed by configuration.
        case blockedAddress = "blocked_address"
        /// The source's host (or a redirect's) is not in `[download] allowed_sources`.
        case blockedSource = "blocked_source"
        /// The host failed at the network level (DNS, connect, connect
        /// timeout) several times in a row in this run; not tried again until
        /// later (retry queue).
        case hostOffline = "host_offline"
        /// Too many transfers already wait for this host (`[download] queue_per_host`).
        case queueFull = "queue_full"
    }

    public let code: Code
    public let message: String
    /// The error this one was made from, if any.
    public let underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String { message }

    /// A stable key for counting failures: `dns`, `http_404`, `not_an_image`,
    /// `too_large`, `cancelled`...
    public var reason: String {
        switch code {
        case .invalidURL: "invalid_url"
        case .invalidRequest: "invalid_request"
        case .network(let reason): reason.rawValue
        case .httpStatus(let status): "http_\(status)"
        case .notAnImage: "not_an_image"
        case .tooLarge: "too_large"
        case .unsupported: "unsupported"
        case .decode: "decode"
        case .storage: "storage"
        case .storageFull: "storage_full"
        case .incompatibleSchema: "incompatible_schema"
        case .notCached: "not_cached"
        case .cancelled: "cancelled"
        case .configuration: "configuration"
        }
    }

    package static func cancelled(_ what: String) -> ArtCacheError { ArtCacheError(.cancelled, "\(what): cancelled") }
}
