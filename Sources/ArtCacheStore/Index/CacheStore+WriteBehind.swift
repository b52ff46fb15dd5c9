import ArtCacheCore
import Foundation
import Logging

/// Store-behind: puts that return before their write, so a miss is answered
/// once it is rendered and its bytes are committed behind the answer (the
/// same crash-safe path as every put: temp file, rename, sync, commit,
/// on a task of their own, never on the answer's path).
///
/// A put behind returns its row as it will be committed; until then the
/// row and bytes are read from ``WriteBehind`` (``entry(forKey:)``,
/// ``lookup(key:counting:)``). When `[cache] write_behind_max` puts are
/// pending, a further one is not written and is counted (`writes_dropped`);
/// so is one whose write fails (logged). With `write_behind_max = 0` these
/// are the awaited puts. ``close()`` waits for every accepted one.
extension CacheStore {
    /// ``put(url:data:contentType:declaredType:repaired:validators:now:)``
    /// that returns before the write (see the extension's notes).
    @discardableResult
    /// `sha256`: the bytes' ``hash(_:)`` when the caller made it already (else made here).
    package func putBehind(url: String, data: Data, contentType: String, declaredType: String? = nil,
                           repaired: Bool = false, validators: HTTPValidators = HTTPValidators(),
                           fetched: FetchedRendition? = nil, sha256: String? = nil, now: Date = Date()) async throws -> CacheEntry {
        let (provisional, extra) = try originalPut(url: url, data: data, contentType: contentType, declaredType: declaredType,
                                                   repaired: repaired, validators: validators, now: now)
        var entry = provisional
        entry.fetchedURL = fetched?.url
        entry.rendition = fetched?.rendition
        if let sha256 { entry.sha256 = sha256 }
        guard behind.capacity > 0 else { return try await write(entry, data: data, extra: extra) }
        if entry.sha256.isEmpty { entry.sha256 = try await Self.hash(data) }
        return try await behindWrite(entry, data: data) { [self] entry in
            try await write(entry, data: data, admitted: true, extra: extra)
        }
    }

    /// ``putVariant(parent:spec:data:contentType:width:height:sourceSHA256:now:)``
    /// of a render of `parent`'s bytes (its `sha256`), returning before the
    /// write; it is written after a pending write of `parent`.
    @discardableResult
    package func putVariantBehind(parent: CacheEntry, spec: String, data: Data, contentType: String, width: Int?, height: Int?,
                                  intrinsics: OriginalIntrinsics? = nil, now: Date = Date()) async throws -> CacheEntry {
        let parentKey = parent.cacheKey
        guard behind.capacity > 0 else {
            return try await putVariant(parent: parentKey, spec: spec, data: data, contentType: contentType, width: width,
                                        height: height, sourceSHA256: parent.sha256, intrinsics: intrinsics, now: now)
        }
        let key = CacheKey(parent: parentKey, spec: spec)
        var entry = CacheEntry(
            key: key.hex, url: parent.url, host: parent.host, kind: .variant, parentKey: parent.key, spec: spec,
            blob: blobPath(for: key, size: data.count), contentType: contentType, declaredType: nil,
            size: Int64(data.count), sha256: "", sourceSHA256: parent.sha256, width: width, height: height,
            etag: nil, lastModified: nil, expiresAt: nil, freshFor: nil, createdAt: now, accessedAt: now, hitCount: 0)
        entry.sha256 = try await Self.hash(data)
        return try await behindWrite(entry, data: data) { [self] _ in
            try await putVariant(parent: parentKey, spec: spec, data: data, contentType: contentType, width: width,
                                 height: height, sourceSHA256: parent.sha256, intrinsics: intrinsics, now: now, admitted: true)
        }
    }

    /// Puts pending behind now; accepted and dropped since the store opened.
    package var writeBehindActivity: (pending: Int, accepted: Int64, dropped: Int64) { behind.activity }

    /// Returns once no put behind is pending (for `stats` in this process,
    /// and tests). Puts accepted meanwhile are waited for too.
    package func waitForWritesBehind() async {
        while let key = behind.anyPendingKey() { await behind.waitUntilWritten(key) }
    }

    /// Accepts `entry` and starts `write` for it on a task of its own, or
    /// counts it dropped (the queue is full). A put of the same key still
    /// pending makes this one an awaited write, after that one.
    private func behindWrite(_ entry: CacheEntry, data: Data,
                             write: @escaping @Sendable (CacheEntry) async throws -> CacheEntry) async throws -> CacheEntry {
        try gate.enter()
        switch behind.admit(entry, data: data) {
        case .full:
            gate.leave()
            recordDroppedWrite()
            logger.debug("write dropped: the store-behind queue is full",
                         metadata: ["key": "\(entry.key)", "write_behind_max": "\(behind.capacity)"])
            return entry
        case .busy:
            defer { gate.leave() }
            await behind.waitUntilWritten(entry.key)
            return try await write(entry)
        case .admitted(let id):
            let (behind, logger) = (self.behind, self.logger)
            // Part of the write path, not a background job: owned by the
            // write gate (close() waits for it), bounded by write_behind_max
            // (admit() said so), and it only joins the group commit.
            Task { [self] in
                defer { gate.leave() }
                do {
                    _ = try await write(entry)
                    behind.finish(entry.key, id: id, stored: true)
                } catch {
                    behind.finish(entry.key, id: id, stored: false)
                    recordDroppedWrite()
                    let level: Logger.Level = (error as? StoreError).map { $0.code == .missingParent || $0.code == .staleSource } == true
                        ? .debug : .warning
                    logger.log(level: level, "write behind the answer failed: not stored",
                               metadata: ["url": "\(entry.url)", "key": "\(entry.key)", "error": "\(error)"])
                }
            }
            return entry
        }
    }

    /// SHA-256 of `data` (hex, as rows name their bytes), off Swift's
    /// cooperative pool when large (``hashInPlaceMax``).
    package static func hash(_ data: Data) async throws -> String {
        if data.count <= hashInPlaceMax { return CacheKey.sha256Hex(data) }
        return try await Blocking.run { CacheKey.sha256Hex(data) }
    }
}
