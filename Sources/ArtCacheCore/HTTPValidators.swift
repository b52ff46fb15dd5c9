import Foundation

/// HTTP caching facts kept with an original so it can be revalidated.
///
/// `etag` and `lastModified` come from an origin and are sent back to it
/// (If-None-Match, If-Modified-Since): a value that could not be a sane
/// header (CR, LF or another control byte, non-ASCII, or longer than
/// `maxValidatorLength`) is dropped when the value is made, and again
/// before it is sent, never replayed.
package struct HTTPValidators: Sendable, Equatable, Codable {
    package var etag: String?
    package var lastModified: String?
    /// When the freshness ends (RFC 9111, `HTTPCachePolicy`); nil only in
    /// rows stored before every response got one (dated when read).
    package var expiresAt: Date?
    /// The freshness lifetime the origin gave (0 for `no-cache`); what a
    /// later 304 without caching headers renews.
    package var freshFor: TimeInterval?
    /// The origin's `stale-while-revalidate=` seconds (nil: `[cache]`'s default).
    package var staleWhileRevalidate: TimeInterval?
    /// The origin's `stale-if-error=` seconds (nil: `[cache]`'s default).
    package var staleIfError: TimeInterval?
    /// The origin's `must-revalidate`, `proxy-revalidate` or `no-cache`:
    /// never served stale, not even while the origin is unreachable.
    package var mustRevalidate = false
    /// The origin's `immutable`: passed on by the service.
    package var immutable = false

    /// Longest ETag or Last-Modified value kept (real ones are under 100 bytes).
    package static let maxValidatorLength = 256

    package init(etag: String? = nil, lastModified: String? = nil, expiresAt: Date? = nil, freshFor: TimeInterval? = nil,
                                  staleWhileRevalidate: TimeInterval? = nil, staleIfError: TimeInterval? = nil,
                                  mustRevalidate: Bool = false, immutable: Bool = false) {
        self.etag = Self.replayable(etag)
        self.lastModified = Self.replayable(lastModified)
        self.expiresAt = expiresAt
        self.freshFor = freshFor
        self.staleWhileRevalidate = staleWhileRevalidate
        self.staleIfError = staleIfError
        self.mustRevalidate = mustRevalidate
        self.immutable = immutable
    }

    /// `value` when it may be sent back as a header value: 1 to
    /// `maxValidatorLength` bytes of visible ASCII and inner spaces; else nil.
    package static func replayable(_ value: String?) -> String? {
        guard let value else { return nil }
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= maxValidatorLength,
              bytes.allSatisfy({ $0 == 0x20 || (0x21...0x7E).contains($0) }),
              bytes.first != 0x20, bytes.last != 0x20 else { return nil }
        return value
    }
}
