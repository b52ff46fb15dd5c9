import Foundation

/// HTTP caching facts kept with an original so it can be revalidated.
public struct HTTPValidators: Sendable, Equatable, Codable {
    public var etag: String?
    public var lastModified: String?
    /// When the origin's freshness ends; nil means no expiry was given.
    public var expiresAt: Date?

    public init(etag: String? = nil, lastModified: String? = nil, expiresAt: Date? = nil) {
        self.etag = etag
        self.lastModified = lastModified
        self.expiresAt = expiresAt
    }
}
