import ArtCacheCore
import Foundation
internal import GRDB

extension CacheStore {
    /// Records an original's intrinsics when its row holds the bytes they
    /// were computed from (`sha256`) and is live; a put of `key` still
    /// written behind is waited for first. Returns whether a row took them:
    /// false when the original was replaced or evicted meanwhile (the
    /// placeholder of other bytes is never attached to it).
    @discardableResult
    package func setPlaceholder(key: String, sha256: String, _ intrinsics: OriginalIntrinsics) async throws -> Bool {
        await behind.waitUntilWritten(key)
        return try await Blocking.run {
            try self.db.write { db in try intrinsics.record(key: key, sha256: sha256, db: db) }
        }
    }

    /// Live originals without a placeholder, oldest first (`verify --repair`
    /// computes theirs), at most `limit`, after `after` (a key; nil: from the
    /// start), in key order.
    package func originalsWithoutPlaceholder(after: String?, limit: Int) async throws -> [CacheEntry] {
        try await Blocking.run {
            try self.db.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT \(CacheEntry.columns) FROM entry
                    WHERE kind = 'original' AND thumbhash IS NULL AND (?1 IS NULL OR key > ?1) AND \(Schema.live())
                    ORDER BY key LIMIT ?2
                    """, arguments: [after, limit]).map(CacheEntry.init(row:))
            }
        }
    }

    /// How many live originals lack their placeholder.
    package func countOriginalsWithoutPlaceholder() async throws -> Int {
        try await Blocking.run {
            try self.db.read { db in
                try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM entry WHERE kind = 'original' AND thumbhash IS NULL AND \(Schema.live())
                    """) ?? 0
            }
        }
    }
}

extension CacheStore {
    /// Records where the variant `key` (while it holds the bytes `sha256`)
    /// stands with format upgrades. False when the row is gone or holds
    /// other bytes now.
    @discardableResult
    package func setUpgrade(key: String, sha256: String, _ state: CacheEntry.UpgradeState) async throws -> Bool {
        await behind.waitUntilWritten(key)
        return try await Blocking.run {
            try self.db.write { db in
                try db.execute(sql: "UPDATE entry SET upgrade = (upgrade & ~?) | ? WHERE key = ? AND sha256 = ? AND kind = 'variant'",
                               arguments: [CacheEntry.upgradeStateMask, state.rawValue, key, sha256])
                return db.changesCount > 0
            }
        }
    }

    /// Records that an upgrade of the variant `key` (while it holds the
    /// bytes `sha256`) to another format, ``CacheEntry/noGainFormats``'
    /// bit `format`, did not save enough. False when the row is gone or
    /// holds other bytes now.
    @discardableResult
    package func setNoGain(key: String, sha256: String, format: Int) async throws -> Bool {
        precondition((0..<16).contains(format))
        await behind.waitUntilWritten(key)
        return try await Blocking.run {
            try self.db.write { db in
                try db.execute(sql: "UPDATE entry SET upgrade = upgrade | ? WHERE key = ? AND sha256 = ? AND kind = 'variant'",
                               arguments: [1 << (CacheEntry.noGainShift + format), key, sha256])
                return db.changesCount > 0
            }
        }
    }
}
