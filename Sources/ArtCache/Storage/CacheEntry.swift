import Foundation
internal import GRDB

/// Whether a stored item is a downloaded original or a rendered variant of one.
public enum EntryKind: String, Sendable, Codable {
    case original
    case variant
}

/// One row of the index: everything known about a stored item.
public struct CacheEntry: Sendable, Equatable, Codable {
    public var key: String
    public var url: String
    public var host: String
    public var kind: EntryKind
    public var parentKey: String?
    /// Canonical spec of a variant (e.g. `100x100,contain,jpeg,q80`).
    public var spec: String?
    /// Where the blob file was when this row was read, relative to the cache
    /// directory; nil when the bytes live inside the database (blobs up to
    /// `[cache] inline_max`). Informational only: another process's eviction
    /// may remove the file at any time. Read the bytes through the API.
    public var blob: String?
    /// MIME type decided from the bytes.
    public var contentType: String
    /// Media type the origin declared, if any.
    public var declaredType: String?
    public var size: Int64
    /// SHA-256 of the blob's bytes.
    public var sha256: String
    /// For a variant: the SHA-256 of the original bytes it was rendered from.
    public var sourceSHA256: String?
    public var width: Int?
    public var height: Int?
    public var etag: String?
    public var lastModified: String?
    public var expiresAt: Date?
    /// The freshness lifetime the origin gave, renewed by a 304 without caching headers.
    public var freshFor: TimeInterval?
    public var createdAt: Date
    public var accessedAt: Date
    public var hitCount: Int

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
        static let sourceSHA256 = GRDB.Column("source_sha256")
        static let width = GRDB.Column("width")
        static let height = GRDB.Column("height")
        static let etag = GRDB.Column("etag")
        static let lastModified = GRDB.Column("last_modified")
        static let expiresAt = GRDB.Column("expires_at")
        static let freshFor = GRDB.Column("fresh_for")
        static let createdAt = GRDB.Column("created_at")
        static let accessedAt = GRDB.Column("accessed_at")
        static let hitCount = GRDB.Column("hit_count")
    }

    public var cacheKey: CacheKey { CacheKey(hex: key) }
    /// The bytes live inside the SQLite database, not in a file.
    public var isInline: Bool { blob == nil }
    public var validators: HTTPValidators {
        HTTPValidators(etag: etag, lastModified: lastModified, expiresAt: expiresAt, freshFor: freshFor)
    }

    /// True while the origin's freshness lasts (no expiry recorded: always fresh).
    public func isFresh(at now: Date = Date()) -> Bool {
        guard let expiresAt else { return true }
        return expiresAt > now
    }
}

/// The SQLite mapping, internal so that no GRDB type is part of the public API.
extension CacheEntry {
    /// The columns every entry query selects, in this order: rows are
    /// decoded by position (by-name lookups cost more than the SQLite read
    /// on the hot path). Prefix with a table name via ``columns(of:)``.
    static let columnNames = ["key", "url", "host", "kind", "parent_key", "spec", "blob", "content_type", "declared_type",
                              "size", "sha256", "source_sha256", "width", "height", "etag", "last_modified", "expires_at",
                              "fresh_for", "created_at", "accessed_at", "hit_count"]
    static let columns = columnNames.joined(separator: ", ")
    static func columns(of table: String) -> String { columnNames.map { "\(table).\($0)" }.joined(separator: ", ") }

    /// Decodes a row selected with ``columns`` (first, in that order).
    init(row: Row) {
        key = row[0]
        url = row[1]
        host = row[2]
        kind = EntryKind(rawValue: row[3]) ?? .original
        parentKey = row[4]
        spec = row[5]
        blob = row[6]
        contentType = row[7]
        declaredType = row[8]
        size = row[9]
        sha256 = row[10]
        sourceSHA256 = row[11]
        width = row[12]
        height = row[13]
        etag = row[14]
        lastModified = row[15]
        expiresAt = (row[16] as Double?).map(Date.init(timeIntervalSince1970:))
        freshFor = row[17]
        createdAt = Date(timeIntervalSince1970: row[18])
        accessedAt = Date(timeIntervalSince1970: row[19])
        hitCount = row[20]
    }

    static func fetchOne(_ db: Database, key: String) throws -> CacheEntry? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(columns) FROM entry WHERE key = ?"), arguments: [key]).map(CacheEntry.init(row:))
    }

    private var databaseValues: [(GRDB.Column, (any DatabaseValueConvertible)?)] {
        [(Column.key, key), (Column.url, url), (Column.host, host), (Column.kind, kind.rawValue), (Column.parentKey, parentKey),
         (Column.spec, spec), (Column.blob, blob), (Column.contentType, contentType), (Column.declaredType, declaredType),
         (Column.size, size), (Column.sha256, sha256), (Column.sourceSHA256, sourceSHA256), (Column.width, width), (Column.height, height), (Column.etag, etag),
         (Column.lastModified, lastModified), (Column.expiresAt, expiresAt?.timeIntervalSince1970), (Column.freshFor, freshFor),
         (Column.createdAt, createdAt.timeIntervalSince1970), (Column.accessedAt, accessedAt.timeIntervalSince1970),
         (Column.hitCount, hitCount)]
    }

    /// INSERT, or UPDATE of the row with the same key when `replacing`.
    func save(_ db: Database, replacing: Bool) throws {
        let values = databaseValues
        if replacing {
            let assignments = values.dropFirst().map { "\($0.0.name) = ?" }.joined(separator: ", ")
            try db.execute(sql: "UPDATE entry SET \(assignments) WHERE key = ?",
                           arguments: StatementArguments(values.dropFirst().map(\.1) + [key]))
        } else {
            let names = values.map(\.0.name).joined(separator: ", ")
            let marks = Array(repeating: "?", count: values.count).joined(separator: ", ")
            try db.execute(sql: "INSERT INTO entry (\(names)) VALUES (\(marks))", arguments: StatementArguments(values.map(\.1)))
        }
    }
}

/// A stored item with its bytes, as returned by a lookup. The bytes were
/// read whole (from the database or from a file opened before any eviction
/// could remove it), so they stay valid whatever other processes do.
public struct CachedImage: Sendable {
    public let entry: CacheEntry
    public let data: Data
}
