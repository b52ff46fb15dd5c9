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

    public func encode(to container: inout PersistenceContainer) throws {
        container[Column.key] = key
        container[Column.url] = url
        container[Column.host] = host
        container[Column.kind] = kind
        container[Column.parentKey] = parentKey
        container[Column.spec] = spec
        container[Column.blob] = blob
        container[Column.contentType] = contentType
        container[Column.declaredType] = declaredType
        container[Column.size] = size
        container[Column.sha256] = sha256
        container[Column.width] = width
        container[Column.height] = height
        container[Column.etag] = etag
        container[Column.lastModified] = lastModified
        container[Column.expiresAt] = expiresAt?.timeIntervalSince1970
        container[Column.createdAt] = createdAt.timeIntervalSince1970
        container[Column.accessedAt] = accessedAt.timeIntervalSince1970
        container[Column.hitCount] = hitCount
    }

    enum Column {
        static let key = GRDB.Column("key")
        static let url = GRDB.Column("url")
        static let host = GRDB.Column("host")
        static let kind = GRDB.Column("kind")
        static let parentKey = GRDB.Column("parent_key")
        static let spec = GRDB.Column("spec")
        static let blob = GRDB.Column("blob")
        static let contentType = GRDB.Column("content_type")
        static let declaredType = GRDB.Column("declared_type")
        static let size = GRDB.Column("size")
        static let sha256 = GRDB.Column("sha256")
        static let width = GRDB.Column("width")
        static let height = GRDB.Column("height")
        static let etag = GRDB.Column("etag")
        static let lastModified = GRDB.Column("last_modified")
        static let expiresAt = GRDB.Column("expires_at")
        static let createdAt = GRDB.Column("created_at")
        static let accessedAt = GRDB.Column("accessed_at")
        static let hitCount = GRDB.Column("hit_count")
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

extension CacheEntry {
    // Hand-written row mapping: Codable with snake_case key strategies costs
    // more than the SQLite lookup itself on the hot read path.
    public init(row: Row) throws {
        key = row[Column.key]
        url = row[Column.url]
        host = row[Column.host]
        kind = row[Column.kind]
        parentKey = row[Column.parentKey]
        spec = row[Column.spec]
        blob = row[Column.blob]
        contentType = row[Column.contentType]
        declaredType = row[Column.declaredType]
        size = row[Column.size]
        sha256 = row[Column.sha256]
        width = row[Column.width]
        height = row[Column.height]
        etag = row[Column.etag]
        lastModified = row[Column.lastModified]
        expiresAt = (row[Column.expiresAt] as Double?).map(Date.init(timeIntervalSince1970:))
        createdAt = Date(timeIntervalSince1970: row[Column.createdAt])
        accessedAt = Date(timeIntervalSince1970: row[Column.accessedAt])
        hitCount = row[Column.hitCount]
    }
}

/// A stored item with its bytes, as returned by a lookup.
public struct CachedImage: Sendable {
    public let entry: CacheEntry
    public let data: Data
    /// Absolute path of the blob (valid until the item is evicted).
    public let path: String
}
