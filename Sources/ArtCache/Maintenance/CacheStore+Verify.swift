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
    /// temp files removed. The repair holds the index's write lock while it
    /// lists blobs, so a blob another process is committing is never mistaken
    /// for an orphan.
    public func verify(repair: Bool = false, hash: Bool = false) async throws -> VerifyReport {
        try await flush()
        let blobs = self.blobs
        let body = { @Sendable (db: Database) throws -> (VerifyReport, [String]) in
            var report = VerifyReport(rows: 0, blobs: 0, missingBlobs: 0, sizeMismatches: 0, hashMismatches: 0,
                                      hashed: hash, orphanBlobs: 0, tempFiles: 0, repaired: 0, problems: [])
            func note(_ kind: String, _ key: String?, _ path: String) {
                if report.problems.count < 100 { report.problems.append(.init(kind: kind, key: key, path: path)) }
            }
            var referenced = Set<String>()
            var badKeys: [String] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT key, blob, size, sha256 FROM entry")
            while let row = try rows.next() {
                report.rows += 1
                let key: String = row["key"]
                let blob: String = row["blob"]
                referenced.insert(blob)
                guard let size = blobs.size(of: blob) else {
                    report.missingBlobs += 1
                    note("missing_blob", key, blob)
                    badKeys.append(key)
                    continue
                }
                if size != row["size"] as Int64 {
                    report.sizeMismatches += 1
                    note("size_mismatch", key, blob)
                    badKeys.append(key)
                } else if hash, let data = try blobs.read(blob), CacheKey.sha256Hex(data) != row["sha256"] as String {
                    report.hashMismatches += 1
                    note("hash_mismatch", key, blob)
                    badKeys.append(key)
                }
            }
            let onDisk = blobs.allBlobs()
            report.blobs = onDisk.count
            let orphans = onDisk.filter { !referenced.contains($0) }
            report.orphanBlobs = orphans.count
            for orphan in orphans { note("orphan_blob", nil, orphan) }
            // A temp file of a live writer is work in progress, not a leftover
            // (unless it is a day old).
            let stale = blobs.temporaryFiles().filter { !$0.writerAlive || $0.age > 86400 }
            report.tempFiles = stale.count
            for temp in stale { note("temp_file", nil, temp.path) }
            guard repair else { return (report, []) }

            var garbage = orphans
            // Variants of a bad original go with it.
            if !badKeys.isEmpty { garbage += try Self.deleteEntries(db, keys: badKeys) }
            for temp in stale { blobs.discardTemporary(temp.path) }
            report.repaired = report.problemCount
            return (report, garbage)
        }
        let (report, garbage) = repair ? try await db.write(body) : try await db.read(body)
        blobs.remove(garbage)
        return report
    }
}
