import Foundation

/// HTTP caching facts kept with an original so it can be revalidated.
public struct HTTPValidators: Sendable, Equatable, Codable {
    public var etag: String?
    public var lastModified: String?
    /// When the origin's freshness ends; nil means no expiry was given.
    public var expiresAt: Date?
    /// The freshness lifetime the origin gave (0 for `no-cache`); what a
    /// later 304 without caching headers renews.
    public var freshFor: TimeInterval?

    public init(etag: String? = nil, lastModified: String? = nil, expiresAt: Date? = nil, freshFor: TimeInterval? = nil) {
        self.etag = etag
        self.lastModified = lastModified
        self.expiresAt = expiresAt
        self.freshFor = freshFor
    }
}
