import Crypto
import Foundation
internal import GRDB

/// What storing an original did.
public struct StoredOriginal: Sendable {
    public let entry: CacheEntry
    public let sniffed: SniffResult
    /// The declared type disagreed with the bytes and was corrected.
    public let repaired: Bool
}

extension CacheStore {
    /// Stores the bytes of `url` as an original. The bytes are sniffed first:
    /// a body that is not an image throws `.notAnImage` and nothing is stored.
    /// A declared type that disagrees with the bytes is repaired and counted.
    @discardableResult
    public func put(url: String, data: Data, declaredType: String? = nil,
                    validators: HTTPValidators = HTTPValidators(), now: Date = Date()) async throws -> StoredOriginal {
        let normalized = try NormalizedURL.forStore(url)
        let checked: Sniffer.Checked
        do {
            checked = try Sniffer.check(data, declaredType: declaredType)
        } catch {
            throw StoreError(.notAnImage, error.message, sniffed: error.sniffed)
        }
        let (sniffed, declared, repaired) = (checked.sniffed, checked.declared, checked.repaired)
        let key = normalized.key
        let entry = CacheEntry(
            key: key.hex, url: normalized.string, host: normalized.host, kind: .original,
            parentKey: nil, spec: nil, blob: blobs.newBlobPath(for: key),
            contentType: sniffed.mimeType, declaredType: declared, size: Int64(data.count),
            sha256: CacheKey.sha256Hex(data), width: nil, height: nil,
            etag: validators.etag, lastModified: validators.lastModified, expiresAt: validators.expiresAt,
            freshFor: validators.freshFor, createdAt: now, accessedAt: now, hitCount: 0)
        let stored = try await write(entry, data: data) { db, old in
            // Stored at last: it leaves the offline retry queue, in the same transaction.
            try db.execute(sql: "DELETE FROM retry_queue WHERE url = ?", arguments: [normalized.string])
            if repaired {
                try db.execute(sql: """
                    INSERT INTO repair (declared, sniffed, count) VALUES (?, ?, 1)
                    ON CONFLICT(declared, sniffed) DO UPDATE SET count = count + 1
                    """, arguments: [declared ?? "none", sniffed.mimeType])
            }
            // New bytes make old variants stale.
            guard let old, old.sha256 != entry.sha256 else { return [] }
            let stale = try String.fetchAll(db, sql: "SELECT blob FROM entry WHERE parent_key = ?", arguments: [key.hex])
            try db.execute(sql: "DELETE FROM entry WHERE parent_key = ?", arguments: [key.hex])
            return stale
        }
        return StoredOriginal(entry: stored, sniffed: sniffed, repaired: repaired)
    }

    /// Stores a rendered variant of the original `parent`, under `spec`.
    @discardableResult
    public func putVariant(parent: CacheKey, spec: String, data: Data, width: Int?, height: Int?,
                           now: Date = Date()) async throws -> CacheEntry {
        let sniffed = Sniffer.sniff(data)
        guard sniffed.format.isImage else {
            throw StoreError(.notAnImage, "rendered variant is \(sniffed.format.displayName), not an image", sniffed: sniffed.format)
        }
        guard let parentRow = try await entry(forKey: parent), parentRow.kind == .original else {
            throw StoreError(.missingParent, "original \(parent.hex) is not in the cache (evicted?)")
        }
        let key = CacheKey(parent: parent, spec: spec)
        let entry = CacheEntry(
            key: key.hex, url: parentRow.url, host: parentRow.host, kind: .variant, parentKey: parent.hex, spec: spec,
            blob: blobs.newBlobPath(for: key), contentType: sniffed.mimeType, declaredType: nil,
            size: Int64(data.count), sha256: CacheKey.sha256Hex(data), width: width, height: height,
            etag: nil, lastModified: nil, expiresAt: nil, freshFor: nil, createdAt: now, accessedAt: now, hitCount: 0)
        do {
            return try await write(entry, data: data) { _, _ in [] }
        } catch let error as StoreError where error.isForeignKeyViolation {
            throw StoreError(.missingParent, "original \(parent.hex) was evicted while its variant was stored")
        }
    }

    /// Records a successful revalidation (HTTP 304): new validators and expiry,
    /// no new bytes.
    public func refresh(key: CacheKey, validators: HTTPValidators, now: Date = Date()) async throws {
        try await db.write { db in
            try db.execute(sql: """
                UPDATE entry SET etag = coalesce(?, etag), last_modified = coalesce(?, last_modified),
                    expires_at = ?, fresh_for = ?, accessed_at = max(accessed_at, ?) WHERE key = ?
                """, arguments: [validators.etag, validators.lastModified, validators.expiresAt?.timeIntervalSince1970,
                                 validators.freshFor, now.timeIntervalSince1970, key.hex])
        }
    }

    /// The crash-safe write path shared by originals and variants:
    /// 1. bytes to a temp file, fsync'd (outside any lock);
    /// 2. in one immediate transaction: rename into place, upsert the row,
    ///    run `extra` (which returns more blobs to delete after commit);
    /// 3. after commit, delete replaced blobs, then enforce the limits.
    /// A SIGKILL anywhere leaves only complete blobs behind committed rows;
    /// what may be left over (temp file, orphan blob) is for `verify --repair`.
    private func write(_ entry: CacheEntry, data: Data,
                       extra: @escaping @Sendable (Database, CacheEntry?) throws -> [String]) async throws -> CacheEntry {
        let blobs = self.blobs
        let temp = try await Blocking.run { try blobs.writeTemporary(data) }
        let committed: (row: CacheEntry, garbage: [String])
        do {
            committed = try await db.write { db -> (CacheEntry, [String]) in
                let old = try CacheEntry.fetchOne(db, key: entry.key)
                try blobs.commitTemporary(temp, to: entry.blob)
                var row = entry
                if let old {
                    row.createdAt = old.kind == entry.kind ? old.createdAt : entry.createdAt
                    row.hitCount = old.hitCount
                    try row.save(db, replacing: true)
                } else {
                    try row.save(db, replacing: false)
                }
                return (row, (old.map { [$0.blob] } ?? []) + (try extra(db, old)))
            }
        } catch {
            blobs.discardTemporary(temp)
            blobs.remove([entry.blob])
            if let storeError = error as? StoreError { throw storeError }
            throw StoreError(.database, "cannot index \(entry.url.isEmpty ? entry.key : entry.url): \(error)",
                             sqliteCode: (error as? DatabaseError)?.extendedResultCode.rawValue)
        }
        blobs.remove(committed.garbage)
        try await enforceLimits()
        return committed.row
    }
}
