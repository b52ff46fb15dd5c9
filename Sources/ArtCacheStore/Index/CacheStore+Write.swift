import Crypto
import ArtCacheCore
import Foundation
internal import GRDB

extension CacheStore {
    /// Stores the bytes of `url` as an original. The store keeps what it is
    /// given: deciding that the bytes are an image (and their type) is the
    /// caller's (the pipeline sniffs before it stores). `contentType` is the
    /// type decided from the bytes; `declaredType` the origin's media type;
    /// `repaired` (they disagreed) is counted under `declared -> contentType`.
    @discardableResult
    package func put(url: String, data: Data, contentType: String, declaredType: String? = nil,
                                      repaired: Bool = false, validators: HTTPValidators = HTTPValidators(),
                                      now: Date = Date()) async throws -> CacheEntry {
        try await put(url: url, data: data, contentType: contentType, declaredType: declaredType, repaired: repaired,
                      validators: validators, fetched: nil, now: now)
    }

    /// `fetched`: the rendition a provider profile chose (its URL and size),
    /// when the bytes came from another URL than `url`. `sha256`: the
    /// bytes' ``hash(_:)`` when the caller made it already (else made here).
    @discardableResult
    package func put(url: String, data: Data, contentType: String, declaredType: String? = nil, repaired: Bool = false,
                     validators: HTTPValidators = HTTPValidators(), fetched: FetchedRendition?, sha256: String? = nil,
                     now: Date = Date()) async throws -> CacheEntry {
        var (entry, extra) = try originalPut(url: url, data: data, contentType: contentType, declaredType: declaredType,
                                             repaired: repaired, validators: validators, now: now)
        entry.fetchedURL = fetched?.url
        entry.rendition = fetched?.rendition
        if let sha256 { entry.sha256 = sha256 }
        return try await write(entry, data: data, extra: extra)
    }

    typealias Extra = @Sendable (Database, CacheEntry?, CacheEntry) throws -> [String]

    /// Where an original's bytes came from when not from its own URL.
    package struct FetchedRendition: Sendable, Hashable {
        package let url: String
        /// Longer side in pixels; ``CacheEntry/originalRendition`` for the provider's original.
        package let rendition: Int

        package init(url: String, rendition: Int) {
            self.url = url
            self.rendition = rendition
        }
    }

    /// The row of an original put and what its savepoint does besides
    /// writing it (shared by ``put(url:data:contentType:declaredType:repaired:validators:now:)``
    /// and ``putBehind(url:data:contentType:declaredType:repaired:validators:now:)``).
    func originalPut(url: String, data: Data, contentType: String, declaredType: String?, repaired: Bool,
                     validators: HTTPValidators, now: Date) throws -> (CacheEntry, Extra) {
        let normalized = try NormalizedURL.forStore(url)
        let declared = declaredType
        let key = normalized.key
        var entry = CacheEntry(
            key: key.hex, url: normalized.string, host: normalized.host, kind: .original,
            parentKey: nil, spec: nil, blob: blobPath(for: key, size: data.count),
            contentType: contentType, declaredType: declared, size: Int64(data.count),
            sha256: "", sourceSHA256: nil, width: nil, height: nil,  // set by write(), off the caller's thread
            etag: validators.etag, lastModified: validators.lastModified, expiresAt: validators.expiresAt,
            freshFor: validators.freshFor, createdAt: now, accessedAt: now, hitCount: 0)
        entry.adoptStaleRules(of: validators)
        return (entry, { db, old, new in
            // Stored at last: it leaves the offline retry queue, in the same transaction.
            try db.cachedStatement(sql: "DELETE FROM retry_queue WHERE url = ?").execute(arguments: [normalized.string])
            try db.cachedStatement(sql: "DELETE FROM negative WHERE key = ?").execute(arguments: [key.hex])
            if repaired {
                try db.execute(sql: """
                    INSERT INTO repair (declared, sniffed, count) VALUES (?, ?, 1)
                    ON CONFLICT(declared, sniffed) DO UPDATE SET count = count + 1
                    """, arguments: [declared ?? "none", contentType])
            }
            // New bytes make old variants stale.
            guard let old, old.sha256 != new.sha256 else { return [] }
            let stale = try String.fetchAll(db.cachedStatement(sql: "SELECT key FROM entry WHERE parent_key = ?"), arguments: [key.hex])
            return try EntryRows.deleteEntries(db, keys: stale)
        })
    }

    /// Stores a rendered variant of the original `parent`, under `spec`;
    /// `contentType` is the type of the rendered bytes.
    ///
    /// `sourceSHA256` is the SHA-256 of the original bytes it was rendered
    /// from: checked against the original's row inside the write transaction,
    /// so a variant of old bytes never lands beside a newer original
    /// (`.staleSource`). A parent evicted meanwhile throws `.missingParent`.
    @discardableResult
    ///
    /// `intrinsics`: the original's, computed from the render's decode,
    /// recorded in its row in the same transaction (no write of their own).
    package func putVariant(parent: CacheKey, spec: String, data: Data, contentType: String, width: Int?, height: Int?,
                           sourceSHA256: String? = nil, intrinsics: OriginalIntrinsics? = nil,
                           now: Date = Date()) async throws -> CacheEntry {
        try await putVariant(parent: parent, spec: spec, data: data, contentType: contentType, width: width, height: height,
                             sourceSHA256: sourceSHA256, intrinsics: intrinsics, now: now, admitted: false)
    }

    /// `admitted`: the caller holds the gate's admission (a put behind).
    func putVariant(parent: CacheKey, spec: String, data: Data, contentType: String, width: Int?, height: Int?,
                    sourceSHA256: String?, intrinsics: OriginalIntrinsics? = nil, now: Date, admitted: Bool) async throws -> CacheEntry {
        // An original still being written behind commits first (the
        // variant's savepoint checks that it is there).
        await behind.waitUntilWritten(parent.hex)
        guard let parentRow = try await committedEntry(forKey: parent), parentRow.kind == .original else {
            throw StoreError(.missingParent, "original \(parent.hex) is not in the cache (evicted?)")
        }
        let source = sourceSHA256 ?? parentRow.sha256
        let key = CacheKey(parent: parent, spec: spec)
        let entry = CacheEntry(
            key: key.hex, url: parentRow.url, host: parentRow.host, kind: .variant, parentKey: parent.hex, spec: spec,
            blob: blobPath(for: key, size: data.count), contentType: contentType, declaredType: nil,
            size: Int64(data.count), sha256: "", sourceSHA256: source, width: width, height: height,  // set by write()
            etag: nil, lastModified: nil, expiresAt: nil, freshFor: nil, createdAt: now, accessedAt: now, hitCount: 0)
        return try await write(entry, data: data, admitted: admitted, check: { db in
            let current = try String.fetchOne(db.cachedStatement(sql: "SELECT sha256 FROM entry WHERE key = ? AND kind = 'original' AND \(Schema.live())"),
                                              arguments: [parent.hex])
            guard let current else {
                throw StoreError(.missingParent, "original \(parent.hex) was evicted while its variant was stored")
            }
            guard current == source else {
                throw StoreError(.staleSource, "original \(parent.hex) changed after its \(spec) variant was rendered")
            }
            if let intrinsics { try intrinsics.record(key: parent.hex, sha256: source, db: db) }
        })
    }

    /// Records a successful revalidation (HTTP 304): new validators and expiry,
    /// no new bytes.
    package func refresh(key: CacheKey, validators: HTTPValidators, now: Date = Date()) async throws {
        try await db.write { db in
            try db.execute(sql: """
                UPDATE entry SET etag = coalesce(?, etag), last_modified = coalesce(?, last_modified),
                    expires_at = ?, fresh_for = ?, stale_while_revalidate = ?, stale_if_error = ?, directives = ?,
                    accessed_at = max(accessed_at, ?) WHERE key = ? AND \(Schema.live())
                """, arguments: [validators.etag, validators.lastModified, validators.expiresAt?.timeIntervalSince1970,
                                 validators.freshFor, validators.staleWhileRevalidate, validators.staleIfError,
                                 (validators.mustRevalidate ? CacheEntry.mustRevalidateBit : 0)
                                    | (validators.immutable ? CacheEntry.immutableBit : 0),
                                 now.timeIntervalSince1970, key.hex])
        }
    }

    /// Gives a row stored without an expiry (before heuristic freshness)
    /// the one computed for it when it was read; a row that has one keeps it.
    package func adoptExpiry(key: CacheKey, expiresAt: Date, freshFor: TimeInterval) async throws {
        try await db.write { db in
            try db.execute(sql: "UPDATE entry SET expires_at = ?, fresh_for = ? WHERE key = ? AND expires_at IS NULL",
                           arguments: [expiresAt.timeIntervalSince1970, freshFor, key.hex])
        }
    }

    /// nil (inline) for blobs up to `inline_max`, else a new file path.
    func blobPath(for key: CacheKey, size: Int) -> String? {
        Int64(size) <= settings.inlineMax ? nil : blobs.newBlobPath(for: key)
    }

    /// Bodies up to this size are hashed on the caller's thread; larger ones
    /// on the blocking pool (SHA-256 runs at some hundreds of MB/s: 16 MiB,
    /// the largest `inline_max`, would hold a cooperative thread for tens of
    /// milliseconds). File blobs are always hashed there, in the job that
    /// writes their temp file.
    static let hashInPlaceMax = 256 << 10

    /// The crash-safe write path shared by originals and variants:
    /// 0. the put is admitted by the closed gate (``WriteGate``), or refused
    ///    with `closed` before anything is written; `entry.sha256` is set
    ///    from `data` (off Swift's cooperative pool when large, see
    ///    ``hashInPlaceMax``);
    /// 1. the put joins the next group commit (``WriteQueue``), on its
    ///    thread: a file blob's bytes go to a temp file; then in the put's
    ///    own savepoint: `check`, `extra` (given the row it replaces and the
    ///    new one), rename into place, upsert the row (and the inline bytes);
    ///    the batch's files and renames are made durable together
    ///    (`[cache] sync`: one syncfs, or each file before its rename and
    ///    each shard folder after), then the batch commits;
    /// 2. after commit, replaced blob files are deleted, the limits enforced.
    /// A SIGKILL anywhere leaves only complete blobs behind committed rows;
    /// what may be left over (temp file, orphan blob) is for `verify --repair`.
    ///
    /// `admitted`: the caller already holds the gate's admission (a put
    /// behind, admitted when it was accepted). A put of the same key still
    /// pending behind is waited for first: the two commit in order.
    func write(_ entry: CacheEntry, data: Data, admitted: Bool = false,
               check: @escaping @Sendable (Database) throws -> Void = { _ in },
               extra: @escaping Extra = { _, _, _ in [] }) async throws -> CacheEntry {
        if !admitted {
            try gate.enter()
            await behind.waitUntilWritten(entry.key)
        }
        defer { if !admitted { gate.leave() } }
        var entry = entry
        var put = PendingPut(entry: entry) { db, old, new in
            try check(db)
            return try extra(db, old, new)
        }
        // A put behind hashed its bytes when it was accepted (or its caller did).
        if entry.sha256.isEmpty { entry.sha256 = try await Self.hash(data) }
        if entry.isInline { put.inlineData = data } else { put.fileData = data }
        put.entry = entry
        let queued = ContinuousClock.now
        defer { stages.record(.storeCommit, since: queued) }
        return try await writes.submit(put)
    }

    /// One group commit (on the write queue's thread): every put in its own
    /// savepoint, one transaction, totals adjusted once.
    func commit(_ puts: [PendingPut]) -> [Result<CacheEntry, StoreError>] {
        do {
            return try blobs.cleanup.shared { commitHoldingCleanup(puts) }
        } catch {
            let failure = Self.storeError(error, writing: nil)
            return puts.map { _ in .failure(failure) }
        }
    }

    private func commitHoldingCleanup(_ puts: [PendingPut]) -> [Result<CacheEntry, StoreError>] {
        var results = [Result<CacheEntry, StoreError>](repeating: .failure(StoreError(.database, "not written")), count: puts.count)
        var garbage: [String] = []
        var renamed: [String] = []
        let sync = settings.sync
        // The file blobs' temp files (`files`: each synced before its
        // rename); a put whose file cannot be written or synced fails alone.
        var temporaries: [Int: String] = [:]
        var failed = Set<Int>()
        for (index, put) in puts.enumerated() {
            guard let data = put.fileData else { continue }
            var written: String?
            do throws(StoreError) {
                let temporary = try blobs.writeTemporary(data)
                written = temporary
                if sync == .files { try blobs.syncTemporary(temporary) }
                temporaries[index] = temporary
            } catch {
                results[index] = .failure(error)
                if let written { blobs.discardTemporary(written) }
                failed.insert(index)
            }
        }
        do {
            // Named before any rename: a writer killed before its commit
            // leaves files the next open knows to remove.
            try blobs.renames.record(temporaries.keys.sorted().map { puts[$0].entry.blob! })
            try db.write { db in
                var delta = Totals()
                for (index, put) in puts.enumerated() where !failed.contains(index) {
                    var outcome: (row: CacheEntry, garbage: [String], delta: Totals)?
                    do {
                        try db.inSavepoint {
                            outcome = try Self.apply(put, temporary: temporaries[index], db: db, blobs: blobs)
                            return .commit
                        }
                    } catch {
                        results[index] = .failure(Self.storeError(error, writing: put.entry))
                        if let temporary = temporaries[index] { blobs.discardTemporary(temporary) }
                        if let blob = put.entry.blob { blobs.remove([blob]) }
                        continue
                    }
                    guard let outcome else { continue }
                    if let blob = put.entry.blob { renamed.append(blob) }
                    results[index] = .success(outcome.row)
                    garbage += outcome.garbage
                    delta.entries += outcome.delta.entries
                    delta.originals += outcome.delta.originals
                    delta.bytes += outcome.delta.bytes
                    delta.inlineBytes += outcome.delta.inlineBytes
                }
                // The files and their renames must be on disk before any row
                // naming them commits.
                switch sync {
                case .files: try blobs.syncDirectories(of: renamed)
                case .filesystem: if !renamed.isEmpty { try blobs.syncFilesystem() }
                }
                try delta.apply(db)
            }
        } catch {
            // The whole batch is undone: nothing it renamed is named by a row.
            let failure = Self.storeError(error, writing: nil)
            for index in puts.indices where !failed.contains(index) {
                if let temporary = temporaries[index] { blobs.discardTemporary(temporary) }
                results[index] = .failure(failure)
            }
            blobs.remove(renamed)
            blobs.renames.clear()
            return results
        }
        blobs.renames.clear()
        blobs.remove(garbage)
        return results
    }

    /// Writes one put inside its savepoint: the row it replaced (if any) is
    /// counted out, the new one in; returns blob files to delete after commit.
    private static func apply(_ put: PendingPut, temporary: String?, db: Database, blobs: BlobStore) throws
        -> (row: CacheEntry, garbage: [String], delta: Totals) {
        let entry = put.entry
        // The row it replaces, if any, live or evicted and not yet reclaimed
        // (then it is already counted out, and the new row takes its place).
        let old = try CacheEntry.fetchOne(db, key: entry.key)
        let horizon = try Schema.horizon(db)
        let oldLive = old.map { $0.accessedAt.timeIntervalSince1970 >= horizon } ?? false
        var delta = Totals()
        var row = entry
        if let old, oldLive {
            row.createdAt = old.kind == entry.kind ? old.createdAt : entry.createdAt
            row.hitCount = old.hitCount
        }
        // The same bytes again (a revalidation's 200): their placeholder stays.
        if let old, old.sha256 == row.sha256, old.kind == row.kind, row.thumbHash == nil {
            row.color = old.color
            row.thumbHash = old.thumbHash
            if row.width == nil, row.height == nil { (row.width, row.height) = (old.width, old.height) }
        }
        // A row stored with a time before the horizon (a clock set back, a
        // caller's `now`) is live all the same: it is counted in.
        if row.accessedAt.timeIntervalSince1970 < horizon { row.accessedAt = Date(timeIntervalSince1970: horizon) }
        var garbage = try put.extra(db, old, row)
        if let temporary, let blob = entry.blob {
            try blobs.commitTemporary(temporary, to: blob)
        }
        try row.save(db, replacing: old != nil)
        if let data = put.inlineData {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO inline_blob (key, data) VALUES (?, ?)")
                .execute(arguments: [entry.key, data])
        } else if old?.isInline == true {
            try db.cachedStatement(sql: "DELETE FROM inline_blob WHERE key = ?").execute(arguments: [entry.key])
        }
        if let old {
            if oldLive { delta.add(old, -1) }
            if let oldBlob = old.blob { garbage.append(oldBlob) }
        }
        delta.add(row)
        return (row, garbage, delta)
    }

    /// A typed store error from whatever a write threw: `storage_full` when
    /// SQLite found the disk full (SQLITE_FULL), `database` for other SQLite errors.
    static func storeError(_ error: any Error, writing entry: CacheEntry?, opening folder: String? = nil) -> StoreError {
        if let error = error as? StoreError { return error }
        let what = folder.map { "cannot open index in \($0)" }
            ?? "cannot index \(entry.map { $0.url.isEmpty ? $0.key : $0.url } ?? "a batch of puts")"
        let sqlite = error as? DatabaseError
        if sqlite?.resultCode == .SQLITE_FULL {
            return StoreError(.storageFull, "\(what): the cache's disk is full (purge or free space): \(error)",
                              sqliteCode: sqlite?.extendedResultCode.rawValue)
        }
        return StoreError(.database, "\(what): \(error)", sqliteCode: sqlite?.extendedResultCode.rawValue)
    }
}
