import Foundation
internal import GRDB

/// The result of checking the index against the blobs. Counts are of
/// problems found; `repaired` counts those fixed. JSON keys are snake_case.
public struct VerifyReport: Sendable, Codable, Equatable {
    public struct Problem: Sendable, Codable, Equatable {
        public var kind: String
        public var key: String?
        public var path: String
    }

    public var rows: Int
    public var blobs: Int
    public var missingBlobs: Int
    public var sizeMismatches: Int
    public var hashMismatches: Int
    public var hashed: Bool
    public var orphanBlobs: Int
    public var tempFiles: Int
    public var repaired: Int
    /// The first problems found (at most 100), for people.
    public var problems: [Problem]

    public var problemCount: Int { missingBlobs + sizeMismatches + hashMismatches + orphanBlobs + tempFiles }
    /// Problems left after repair.
    public var remaining: Int { max(0, problemCount - repaired) }
}

extension CacheStore {
    /// Checks every row against its blob (exists, size, and with `hash` its
    /// SHA-256) and finds orphan blobs and leftover temp files. With `repair`,
    /// bad rows are deleted (with their variants), orphans and dead writers'
    /// temp files removed.
    ///
    /// The scan (and all hashing) runs on a read snapshot, so writers in this
    /// and other processes keep working meanwhile. Only the repair takes the
    /// write lock, briefly: it re-checks each candidate under the lock (a row
    /// changed or a blob committed since the scan is left alone) and then deletes.
    public func verify(repair: Bool = false, hash: Bool = false) async throws -> VerifyReport {
        try await flush()
        let blobs = self.blobs
        let scan = try await db.read { db in try Self.scan(db, blobs: blobs, hash: hash) }
        var report = scan.report
        let stale = blobs.temporaryFiles().filter { !$0.writerAlive || $0.age > 86400 }
        report.tempFiles = stale.count
        for temp in stale { report.note("temp_file", nil, temp.path) }
        guard repair else { return report }

        let candidates = scan.bad
        let orphans = scan.orphans
        let (garbage, cleared) = try await db.write { db -> ([String], Set<String>) in
            // Still bad: the row still names the same blob (blob names are never
            // reused and blobs never rewritten, so that blob is still missing or wrong).
            var badKeys: [String] = []
            var cleared = Set<String>()  // blob paths whose problem is gone since the scan
            for (key, blob, _) in candidates {
                if try String.fetchOne(db, sql: "SELECT blob FROM entry WHERE key = ?", arguments: [key]) == blob {
                    badKeys.append(key)
                } else {
                    cleared.insert(blob)
                }
            }
            // Still orphans: no row names them now (a writer renames its blob and
            // inserts its row in one transaction, which cannot be open while we hold the lock).
            var garbage: [String] = []
            for orphan in orphans {
                let key = BlobStore.key(ofBlob: orphan)
                let named = try key.map { try String.fetchOne(db, sql: "SELECT blob FROM entry WHERE key = ?", arguments: [$0]) } ?? nil
                if named != orphan { garbage.append(orphan) } else { cleared.insert(orphan) }
            }
            if !badKeys.isEmpty { garbage += try Self.deleteEntries(db, keys: badKeys) }
            return (garbage, cleared)
        }
        for temp in stale { blobs.discardTemporary(temp.path) }
        blobs.remove(garbage)
        // What changed since the scan (a row rewritten, a blob committed) was no problem.
        for (_, blob, kind) in candidates where cleared.contains(blob) { report.uncount(kind) }
        for orphan in orphans where cleared.contains(orphan) { report.uncount("orphan_blob") }
        report.problems.removeAll { cleared.contains($0.path) }
        report.repaired = report.problemCount
        return report
    }

    /// One pass over a read snapshot: the report, rows whose blob is bad
    /// (key, blob), and blobs on disk that no row of the snapshot names.
    private static func scan(_ db: Database, blobs: BlobStore, hash: Bool) throws
        -> (report: VerifyReport, bad: [(key: String, blob: String, kind: String)], orphans: [String]) {
        var report = VerifyReport(rows: 0, blobs: 0, missingBlobs: 0, sizeMismatches: 0, hashMismatches: 0,
                                  hashed: hash, orphanBlobs: 0, tempFiles: 0, repaired: 0, problems: [])
        var referenced = Set<String>()
        var bad: [(key: String, blob: String, kind: String)] = []
        let rows = try Row.fetchCursor(db, sql: "SELECT key, blob, size, sha256 FROM entry")
        while let row = try rows.next() {
            report.rows += 1
            let key: String = row["key"]
            let blob: String = row["blob"]
            referenced.insert(blob)
            guard let size = blobs.size(of: blob) else {
                report.missingBlobs += 1
                report.note("missing_blob", key, blob)
                bad.append((key, blob, "missing_blob"))
                continue
            }
            if size != row["size"] as Int64 {
                report.sizeMismatches += 1
                report.note("size_mismatch", key, blob)
                bad.append((key, blob, "size_mismatch"))
            } else if hash, let data = try blobs.read(blob), CacheKey.sha256Hex(data) != row["sha256"] as String {
                report.hashMismatches += 1
                report.note("hash_mismatch", key, blob)
                bad.append((key, blob, "hash_mismatch"))
            }
        }
        let onDisk = blobs.allBlobs()
        report.blobs = onDisk.count
        let orphans = onDisk.filter { !referenced.contains($0) }
        report.orphanBlobs = orphans.count
        for orphan in orphans { report.note("orphan_blob", nil, orphan) }
        return (report, bad, orphans)
    }
}

extension VerifyReport {
    /// Takes back one problem of `kind` found by the scan.
    mutating func uncount(_ kind: String) {
        switch kind {
        case "missing_blob": missingBlobs -= 1
        case "size_mismatch": sizeMismatches -= 1
        case "hash_mismatch": hashMismatches -= 1
        default: orphanBlobs -= 1
        }
    }

    mutating func note(_ kind: String, _ key: String?, _ path: String) {
        if problems.count < 100 { problems.append(.init(kind: kind, key: key, path: path)) }
    }
}
