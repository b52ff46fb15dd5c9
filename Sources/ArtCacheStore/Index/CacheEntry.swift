import ArtCacheCore
import Foundation
internal import GRDB

/// Whether a stored item is a downloaded original or a rendered variant of one.
package enum EntryKind: String, Sendable, Codable {
    case original
    case variant
}

/// One row of the index: everything known about a stored item.
package struct CacheEntry: Sendable, Equatable, Codable {
    package var key: String
    package var url: String
    package var host: String
    package var kind: EntryKind
    package var parentKey: String?
    /// Canonical spec of a variant (e.g. `100x100,contain,jpeg,q80`).
    package var spec: String?
    /// Where the blob file was when this row was read, relative to the cache
    /// directory; nil when the bytes live inside the database (blobs up to
    /// `[cache] inline_max`). Informational only: another process's eviction
    /// may remove the file at any time. Read the bytes through the API.
    package var blob: String?
    /// MIME type decided from the bytes.
    package var contentType: String
    /// Media type the origin declared, if any.
    package var declaredType: String?
    package var size: Int64
    /// SHA-256 of the blob's bytes.
    package var sha256: String
    /// For a variant: the SHA-256 of the original bytes it was rendered from.
    package var sourceSHA256: String?
    package var width: Int?
    package var height: Int?
    package var etag: String?
    package var lastModified: String?
    package var expiresAt: Date?
    /// The freshness lifetime the origin gave, renewed by a 304 without caching headers.
    package var freshFor: TimeInterval?
    package var createdAt: Date
    package var accessedAt: Date
    package var hitCount: Int
    /// An original's dominant colour (`#rrggbb`), once its placeholder is computed.
    package var color: String? = nil
    /// An original's ThumbHash, once its placeholder is computed.
    package var thumbHash: Data? = nil
    /// An original's frames (animation), recorded with its placeholder; nil: not known.
    package var frames: Int? = nil
    /// An original fetched from another URL than its own (a provider
    /// profile's rendition): that URL; nil when fetched as given.
    package var fetchedURL: String? = nil
    /// The rendition's size (longer side, pixels) a profile asked for;
    /// ``originalRendition`` for the provider's original; nil when no
    /// profile chose it.
    package var rendition: Int? = nil
    /// The origin's `stale-while-revalidate=` seconds (nil: `[cache]`'s default).
    package var staleWhileRevalidate: TimeInterval? = nil
    /// The origin's `stale-if-error=` seconds (nil: `[cache]`'s default).
    package var staleIfError: TimeInterval? = nil
    /// The origin said `must-revalidate` (or `proxy-revalidate`, `no-cache`): never served stale.
    package var mustRevalidate = false
    /// The origin said `immutable`.
    package var immutable = false
    /// Where a variant stands with format upgrades to its own format at a
    /// slower effort (the low two bits of `upgrade`, schema v11).
    package var upgrade = UpgradeState.open
    /// The other formats an upgrade from this cold variant was tried in and
    /// did not save enough (`upgrade`'s bits from 2 on, one per format, as
    /// the pipeline numbers them): never tried again from these bytes. Per
    /// better format, so clients of two classes that share a cold variant
    /// (Chrome's AVIF, Safari's slower WebP) each keep their own outcome.
    package var noGainFormats = 0

    /// A variant's format upgrade (docs/formats.md).
    package enum UpgradeState: Int, Sendable, Codable {
        /// A cold encoding: an upgrade may be tried.
        case open = 0
        /// The better encoding did not save enough bytes: never tried again.
        case noGain = 1
        /// These are the better bytes.
        case upgraded = 2
    }
    /// `upgrade`'s bits: the state of the variant's own format (0...2), then ``noGainFormats``.
    package static let upgradeStateMask = 3
    package static let noGainShift = 2

    /// ``rendition`` of the provider's original (any size).
    package static let originalRendition = Int(Int32.max)

    package var cacheKey: CacheKey { CacheKey(hex: key) }
    /// The bytes live inside the SQLite database, not in a file.
    package var isInline: Bool { blob == nil }
    package var validators: HTTPValidators {
        HTTPValidators(etag: etag, lastModified: lastModified, expiresAt: expiresAt, freshFor: freshFor,
                       staleWhileRevalidate: staleWhileRevalidate, staleIfError: staleIfError,
                       mustRevalidate: mustRevalidate, immutable: immutable)
    }

    /// Takes the stale rules of `validators` (the freshness fields are set apart).
    package mutating func adoptStaleRules(of validators: HTTPValidators) {
        staleWhileRevalidate = validators.staleWhileRevalidate
        staleIfError = validators.staleIfError
        mustRevalidate = validators.mustRevalidate
        immutable = validators.immutable
    }

    /// `directives` column bits.
    static let mustRevalidateBit = 1
    static let immutableBit = 2
    var directiveBits: Int { (mustRevalidate ? Self.mustRevalidateBit : 0) | (immutable ? Self.immutableBit : 0) }

    /// True while the origin's freshness lasts (no expiry recorded: always
    /// fresh; only rows stored before heuristic freshness lack one, and the
    /// pipeline gives them one when it reads them).
    package func isFresh(at now: Date = Date()) -> Bool {
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
                              "fresh_for", "created_at", "accessed_at", "hit_count", "color", "thumbhash", "fetched_url", "rendition",
                              "stale_while_revalidate", "stale_if_error", "directives", "upgrade", "frames"]
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
        color = row[21]
        thumbHash = row[22]
        fetchedURL = row[23]
        rendition = row[24]
        staleWhileRevalidate = row[25]
        staleIfError = row[26]
        let bits: Int = row[27]
        mustRevalidate = bits & Self.mustRevalidateBit != 0
        immutable = bits & Self.immutableBit != 0
        let upgradeBits: Int = row[28]
        upgrade = UpgradeState(rawValue: upgradeBits & Self.upgradeStateMask) ?? .open
        noGainFormats = upgradeBits >> Self.noGainShift
        frames = row[29]
    }

    /// The row of `key`, live or evicted (below the horizon, not yet reclaimed).
    static func fetchOne(_ db: Database, key: String) throws -> CacheEntry? {
        try Row.fetchOne(db.cachedStatement(sql: fetchOneSQL), arguments: [key]).map(CacheEntry.init(row:))
    }

    /// The row of `key` if it is live (what every read returns).
    static func fetchLive(_ db: Database, key: String) throws -> CacheEntry? {
        try Row.fetchOne(db.cachedStatement(sql: fetchLiveSQL), arguments: [key]).map(CacheEntry.init(row:))
    }

    /// Built once, as the lookup's: the statement cache is keyed by the SQL
    /// text, so a string interpolated per call was rebuilt and hashed each time.
    private static let fetchOneSQL = "SELECT \(columns) FROM entry WHERE key = ?"
    private static let fetchLiveSQL = "SELECT \(columns) FROM entry WHERE key = ? AND \(Schema.live())"

    /// The values in ``columnNames`` order.
    private var databaseValues: [(any DatabaseValueConvertible)?] {
        [key, url, host, kind.rawValue, parentKey, spec, blob, contentType, declaredType, size, sha256, sourceSHA256,
         width, height, etag, lastModified, expiresAt?.timeIntervalSince1970, freshFor, createdAt.timeIntervalSince1970,
         accessedAt.timeIntervalSince1970, hitCount, color, thumbHash, fetchedURL, rendition,
         staleWhileRevalidate, staleIfError, directiveBits, upgrade.rawValue, frames]
    }

    /// INSERT, or UPDATE of the row with the same key when `replacing`.
    func save(_ db: Database, replacing: Bool) throws {
        let values = databaseValues
        // Cached statements: a put is on the group commit's path, and
        // parsing its SQL again for every row showed in profiles.
        if replacing {
            try db.cachedStatement(sql: Self.updateSQL).execute(arguments: StatementArguments(values.dropFirst() + [key]))
        } else {
            try db.cachedStatement(sql: Self.insertSQL).execute(arguments: StatementArguments(values))
        }
    }

    private static let updateSQL =
        "UPDATE entry SET \(columnNames.dropFirst().map { "\($0) = ?" }.joined(separator: ", ")) WHERE key = ?"
    private static let insertSQL =
        "INSERT INTO entry (\(columns)) VALUES (\(Array(repeating: "?", count: columnNames.count).joined(separator: ", ")))"
}

/// A stored item with its bytes, as returned by a lookup. The bytes were
/// read whole (from the database or from a file opened before any eviction
/// could remove it), so they stay valid whatever other processes do.
package struct CachedImage: Sendable {
    package let entry: CacheEntry
    package let data: Data

    package init(entry: CacheEntry, data: Data) {
        self.entry = entry
        self.data = data
    }
}
