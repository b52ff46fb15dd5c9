import ArtCacheCore
import Foundation
internal import GRDB
import Logging

/// Store v1 → v2, the blob side (the schema side is migration `v4-store-v2`):
/// v1 kept every blob as a file in `objects/ab/cd/`. At open, small ones move
/// inside the database and the others to the one-level layout, in chunks that
/// each commit on their own, so a migration interrupted anywhere (kill -9
/// included) resumes at the next open and never loses an entry:
/// - an inline move inserts the bytes and clears the row's path in one
///   transaction, and only then unlinks the old file;
/// - a re-shard hard-links the file under its new name (the same name one
///   level up, so a retried link is idempotent), syncs the folder,
///   commits the row naming it, then unlinks the old name.
/// Rows whose v1 file is missing or cut are dropped (as `verify --repair`
/// would), and so are rows whose path only looks like v1's to SQL (`LIKE
/// 'objects/__/__/%'`) but is no v1 blob path (a damaged row: the store
/// reads no such path). Rows are visited in key order, each once, so the
/// loop always ends. When no row names a v1 path any more, the v1 folders go.
/// Run by the store's open, before anything else reads the index.
struct LegacyBlobMigration {
    let db: DatabasePool
    let blobs: BlobStore
    /// Blobs this size or smaller move inside the index (`[cache] inline_max`).
    let inlineMax: Int64
    let logger: Logger

    func run() throws {
        let pending = try db.read { db in
            try Int64.fetchOne(db, sql: "SELECT value FROM counter WHERE name = 'legacy_layout'")
        }
        guard pending != nil else { return }
        let moved = try moveLegacyBlobs()
        // v1's second-level folders (`objects/ab/cd/`) and what is left in
        // them: once no row names a v1 path, those files are orphans.
        blobs.removeLegacyFolders()
        try db.write { db in try db.execute(sql: "DELETE FROM counter WHERE name = 'legacy_layout'") }
        logger.info("store migrated to v2", metadata: ["moved": "\(moved)"])
    }

    /// Moves up to `limit` v1 blobs, `chunk` rows per transaction. Returns how many moved.
    @discardableResult
    func moveLegacyBlobs(chunk: Int = 500, limit: Int = .max) throws -> Int {
        var moved = 0
        var after = ""  // the last key visited: each row is visited once, whatever happens to it
        while moved < limit {
            let rows = try db.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT \(CacheEntry.columns) FROM entry WHERE blob LIKE 'objects/__/__/%' AND key > ? ORDER BY key LIMIT ?
                    """, arguments: [after, min(chunk, limit - moved)]).map(CacheEntry.init(row:))
            }
            guard let last = rows.last else { break }
            after = last.key
            var linked: [String] = []
            let (garbage, dropped) = try db.write { db -> ([String], Int) in
                var garbage: [String] = []
                var broken: [String] = []
                var delta = Totals()
                for row in rows {
                    // Re-read under the write lock: another process may have evicted or moved it.
                    guard let current = try CacheEntry.fetchOne(db, key: row.key), let old = current.blob,
                          old == row.blob else { continue }
                    guard BlobStore.isLegacy(old) else {
                        broken.append(current.key)  // names no v1 blob: nothing to move, nothing readable
                        continue
                    }
                    if current.size <= inlineMax {
                        guard let data = try blobs.read(old), Int64(data.count) == current.size else {
                            broken.append(current.key)
                            continue
                        }
                        try db.execute(sql: "INSERT OR REPLACE INTO inline_blob (key, data) VALUES (?, ?)",
                                       arguments: [current.key, data])
                        try db.execute(sql: "UPDATE entry SET blob = NULL WHERE key = ?", arguments: [current.key])
                        delta.inlineBytes += current.size
                    } else {
                        guard blobs.size(of: old) == current.size else {
                            broken.append(current.key)
                            continue
                        }
                        // The same name one level up: a link left by an interrupted
                        // run is the same file, replaced here.
                        let name = old.split(separator: "/").last.map(String.init) ?? current.key
                        let new = "objects/\(current.key.prefix(2))/\(name)"
                        try blobs.link(old, to: new, replacing: true)
                        linked.append(new)
                        try db.execute(sql: "UPDATE entry SET blob = ? WHERE key = ?", arguments: [new, current.key])
                    }
                    garbage.append(old)
                }
                garbage += try EntryRows.deleteEntries(db, keys: broken)
                try blobs.syncDirectories(of: linked)
                try delta.apply(db)
                return (garbage, broken.count)
            }
            blobs.remove(garbage)
            if dropped > 0 {
                logger.warning("v1 rows dropped: their blob is missing, cut, or not a v1 blob path", metadata: ["rows": "\(dropped)"])
            }
            moved += rows.count
        }
        return moved
    }
}
