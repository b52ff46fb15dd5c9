import Foundation
import GRDB

/// Whether a stored item is a downloaded original or a rendered variant of one.
public enum EntryKind: String, Sendable, Codable, DatabaseValueConvertible {
    case original
    case variant
}

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

/// One row of the index: everything known about a stored item.
public struct CacheEntry: Sendable, Equatable, Codable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "entry"

    public var key: String
    public var url: String
    public var host: String
    public var kind: EntryKind
    public var parentKey: String?
    /// Canonical spec of a variant (e.g. `100x100,contain,jpeg,q80`).
    public var spec: String?
    /// Path of the blob, relative to the cache directory.
    public var blob: String
    /// MIME type decided from the bytes.
    public var contentType: String
    /// Media type the origin declared, if any.
    public var declaredType: String?
    public var size: Int64
    /// SHA-256 of the blob's bytes.
    public var sha256: String
    public var width: Int?
    public var height: Int?
    public var etag: String?
    public var lastModified: String?
    public var expiresAt: Date?
    public var createdAt: Date
    public var accessedAt: Date
    public var hitCount: Int

    public static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    public static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase
    // Dates are unix seconds (DOUBLE), so SQL can compare and order them.
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy {
        .timeIntervalSince1970
    }
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy {
        .timeIntervalSince1970
    }

    public var cacheKey: CacheKey { CacheKey(hex: key) }
    public var validators: HTTPValidators {
        HTTPValidators(etag: etag, lastModified: lastModified, expiresAt: expiresAt)
    }

    /// True while the origin's freshness lasts (no expiry recorded: always fresh).
    public func isFresh(at now: Date = Date()) -> Bool {
        guard let expiresAt else { return true }
        return expiresAt > now
    }
}

/// A stored item with its bytes, as returned by a lookup.
public struct CachedImage: Sendable {
    public let entry: CacheEntry
    public let data: Data
    /// Absolute path of the blob (valid until the item is evicted).
    public let path: String
}
