import ArtCacheCore
import Foundation
internal import GRDB

/// What to purge. Selectors combine: an item goes when it matches every
/// filter given (`olderThan`, `host`, `url`, `variantsOnly`); `all` selects
/// everything; `toSize` then removes least recently used items until the
/// cache is at most that size.
package struct PurgeRequest: Sendable, Equatable {
    package var all = false
    /// Not accessed for at least this long.
    package var olderThan: TimeInterval?
    package var host: String?
    package var url: String?
    package var toSize: Int64?
    /// Remove variants only; originals stay.
    package var variantsOnly = false
    package var dryRun = false
    /// Forget the remembered failures (negative answers): their URLs are
    /// asked of the origin again. Alone, it removes no item.
    package var failures = false

    package init(all: Bool = false, olderThan: TimeInterval? = nil, host: String? = nil, url: String? = nil,
                toSize: Int64? = nil, variantsOnly: Bool = false, dryRun: Bool = false, failures: Bool = false) {
        self.failures = failures
        self.all = all
        self.olderThan = olderThan
        self.host = host
        self.url = url
        self.toSize = toSize
        self.variantsOnly = variantsOnly
        self.dryRun = dryRun
    }

    var hasFilter: Bool { olderThan != nil || host != nil || url != nil }
}

/// What a purge removed (or, in a dry run, would remove).
package struct PurgeReport: Sendable, Codable, Equatable {
    package var removed: Int
    package var originals: Int
    package var variants: Int
    package var bytes: Int64
    package var dryRun: Bool
    /// Remembered failures forgotten (`--failures`; in a dry run, that would be).
    package var failures = 0
}

extension StoreMaintenance {
    package func purge(_ request: PurgeRequest, now: Date = Date()) async throws -> PurgeReport {
        guard request.all || request.hasFilter || request.toSize != nil || request.variantsOnly || request.failures else {
            throw StoreError(.invalidRequest,
                             "nothing selected: give --all, --older-than, --host, --url, --to-size, --variants-only or --failures")
        }
        var failures = 0
        if request.failures {
            failures = request.dryRun
                ? try await db.read { db in try NegativeAnswers.count(db, now: now) }
                : try await store.negatives.clear(now: now)
            guard request.all || request.hasFilter || request.toSize != nil || request.variantsOnly else {
                return PurgeReport(removed: 0, originals: 0, variants: 0, bytes: 0, dryRun: request.dryRun, failures: failures)
            }
        }
        let urlKey = try request.url.map { url throws(StoreError) in try NormalizedURL.forStore(url).key.hex }
        let host = request.host?.lowercased()
        do {
            try await store.flush()
        } catch where CacheStore.isDiskFull(error) {
            // The disk is full: the purge (which makes room) goes first; the
            // batched access times stay pending for the next flush.
            logger.warning("access times not written before purge: disk full", metadata: ["error": "\(error)"])
        }
        var report = try await Blocking.run { () throws -> PurgeReport in
            try self.blobs.cleanup.shared {
                let (report, garbage) = try self.store.writeMakingRoomBlocking { db in
                    try Self.purgeRows(db, request: request, urlKey: urlKey, host: host, now: now)
                }
                self.blobs.remove(garbage)
                return report
            }
        }
        try await Blocking.run {
            try self.store.reclaimSpace()
            if !request.dryRun { self.blobs.ensureReserve() }  // room again: keep some back for the next full disk
        }
        report.failures = failures
        return report
    }

    /// Chooses the purge's victims in one transaction and deletes their rows
    /// (not in a dry run); returns the report and the blob files to delete.
    private static func purgeRows(_ db: Database, request: PurgeRequest, urlKey: String?, host: String?,
                                  now: Date) throws -> (PurgeReport, [String]) {
        try EntryRows.clearVictims(db)
        // Choosing by access time: the rows' times must be the latest.
        if request.olderThan != nil || request.toSize != nil { try TouchLog.fold(db) }
        var conditions: [String] = []
        var arguments: [DatabaseValueConvertible?] = []
        if let olderThan = request.olderThan {
            conditions.append("accessed_at < ?")
            arguments.append(now.timeIntervalSince1970 - olderThan)
        }
        if let host {
            conditions.append("host = ?")
            arguments.append(host)
        }
        if let urlKey {
            conditions.append("(key = ? OR parent_key = ?)")
            arguments += [urlKey, urlKey]
        }
        if request.variantsOnly { conditions.append("kind = 'variant'") }
        if request.all || request.hasFilter || (request.variantsOnly && request.toSize == nil) {
            let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            try db.execute(sql: "INSERT OR IGNORE INTO temp.victim (key) SELECT key FROM entry \(whereClause)",
                           arguments: StatementArguments(arguments))
        }
        if let toSize = request.toSize {
            let remaining = try Schema.totals(db) - EntryRows.victimTotals(db)
            try EntryRows.chooseLeastRecentlyUsed(db, bytes: remaining.bytes - toSize, entries: 0,
                                             variantsOnly: request.variantsOnly)
        }
        let going = try EntryRows.victimTotals(db)
        let report = PurgeReport(removed: going.entries, originals: going.originals,
                                 variants: going.entries - going.originals, bytes: going.bytes, dryRun: request.dryRun)
        guard !request.dryRun else {
            try EntryRows.clearVictims(db)
            return (report, [])
        }
        return (report, try EntryRows.deleteVictims(db).files)
    }
}
