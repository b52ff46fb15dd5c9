import Foundation
internal import GRDB

extension CacheStore {
    /// Checks the limits after a write (O(1): the totals row) and evicts when
    /// they are exceeded: least recently accessed first, down to the low-water
    /// mark; items not accessed within `maxAge` go too (checked at most once a
    /// minute per process). Evicting an original takes its variants with it.
    public func enforceLimits(now: Date = Date()) async throws {
        let totals = try await db.read { try Schema.totals($0) }
        let overSize = totals.bytes > settings.maxBytes || totals.entries > settings.maxEntries
        let ageDue = settings.maxAge > 0 && housekeeping.withLock { state in
            guard now.timeIntervalSince(state.lastAgeSweep) >= 60 else { return false }
            state.lastAgeSweep = now
            return true
        }
        guard overSize || ageDue else { return }
        try await flush()  // recent reads must count before choosing victims
        let settings = self.settings
        let garbage = try await db.write { db -> [String] in
            var victims: [String] = []
            if ageDue {
                let cutoff = now.timeIntervalSince1970 - settings.maxAge
                victims += try String.fetchAll(db, sql: "SELECT key FROM entry WHERE accessed_at < ?", arguments: [cutoff])
            }
            victims += try Self.lruVictims(db, settings: settings, excluding: Set(victims))
            guard !victims.isEmpty else { return [] }
            let before = try Schema.totals(db)
            let blobs = try Self.deleteEntries(db, keys: victims)
            let after = try Schema.totals(db)
            try Schema.bump(db, "evictions", by: Int64(before.entries - after.entries))
            try Schema.bump(db, "evicted_bytes", by: before.bytes - after.bytes)
            return blobs
        }
        if !garbage.isEmpty {
            logger.debug("evicted", metadata: ["blobs": "\(garbage.count)"])
        }
        blobs.remove(garbage)
    }

    /// Least recently accessed keys to delete so that bytes and entries fall
    /// to the low-water mark (an original's variants are counted with it).
    static func lruVictims(_ db: Database, settings: CacheSettings, excluding alreadyGoing: Set<String>) throws -> [String] {
        let totals = try remainingTotals(db, excluding: alreadyGoing)
        guard totals.bytes > settings.maxBytes || totals.entries > settings.maxEntries else { return [] }
        return try leastRecentlyUsed(db, from: totals, excluding: alreadyGoing,
                                     targetBytes: Int64(Double(settings.maxBytes) * settings.lowWater),
                                     targetEntries: Int(Double(settings.maxEntries) * settings.lowWater))
    }

    /// Totals as they will be once `keys` (and their variants) are gone.
    static func remainingTotals(_ db: Database, excluding keys: Set<String>) throws -> (entries: Int, bytes: Int64) {
        let totals = try Schema.totals(db)
        guard !keys.isEmpty else { return (totals.entries, totals.bytes) }
        let gone = try family(db, of: Array(keys))
        return (totals.entries - gone.count, totals.bytes - gone.bytes)
    }

    /// Walks the index from the least recently accessed item, choosing keys
    /// until bytes <= `targetBytes` and entries <= `targetEntries`. Choosing an
    /// original counts its variants too (they go with it).
    static func leastRecentlyUsed(_ db: Database, from totals: (entries: Int, bytes: Int64), excluding: Set<String>,
                                  targetBytes: Int64, targetEntries: Int, variantsOnly: Bool = false) throws -> [String] {
        var (entries, bytes) = totals
        var chosen: [String] = []
        var going = excluding
        let children = try db.cachedStatement(sql: "SELECT key, size FROM entry WHERE parent_key = ?")
        let filter = variantsOnly ? "WHERE kind = 'variant'" : ""
        let rows = try Row.fetchCursor(db, sql: "SELECT key, kind, size FROM entry \(filter) ORDER BY accessed_at, key")
        while bytes > targetBytes || entries > targetEntries, let row = try rows.next() {
            let key: String = row["key"]
            guard going.insert(key).inserted else { continue }
            chosen.append(key)
            entries -= 1
            bytes -= row["size"] as Int64
            guard row["kind"] as String == EntryKind.original.rawValue else { continue }
            for child in try Row.fetchAll(children, arguments: [key]) where going.insert(child["key"]).inserted {
                entries -= 1
                bytes -= child["size"] as Int64
            }
        }
        return chosen
    }

    /// Count and bytes of `keys` plus their variants.
    static func family(_ db: Database, of keys: [String]) throws -> (count: Int, bytes: Int64) {
        var count = 0
        var bytes: Int64 = 0
        for chunk in keys.chunked(500) {
            let marks = databaseQuestionMarks(count: chunk.count)
            let row = try Row.fetchOne(db, sql: """
                SELECT count(*) AS n, coalesce(sum(size), 0) AS b FROM entry
                WHERE key IN (\(marks)) OR parent_key IN (\(marks))
                """, arguments: StatementArguments(chunk + chunk))
            count += row?["n"] ?? 0
            bytes += row?["b"] ?? 0
        }
        return (count, bytes)
    }

    /// Deletes rows (and their variants' rows) and returns their blobs, to be
    /// unlinked after the transaction commits.
    static func deleteEntries(_ db: Database, keys: [String]) throws -> [String] {
        var blobs: [String] = []
        for chunk in keys.chunked(500) {
            let marks = databaseQuestionMarks(count: chunk.count)
            let arguments = StatementArguments(chunk + chunk)
            blobs += try String.fetchAll(db, sql: "SELECT blob FROM entry WHERE key IN (\(marks)) OR parent_key IN (\(marks))",
                                         arguments: arguments)
            try db.execute(sql: "DELETE FROM entry WHERE parent_key IN (\(marks)) OR key IN (\(marks))", arguments: arguments)
        }
        return blobs
    }
}

extension Array {
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
