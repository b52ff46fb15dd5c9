import ArtCacheCore
import Foundation
internal import GRDB

/// The result of checking the index against the blobs. Counts are of
/// problems found; `repaired` counts those fixed. JSON keys are snake_case.
package struct VerifyReport: Sendable, Codable, Equatable {
    package struct Problem: Sendable, Codable, Equatable {
        package var kind: String
        package var key: String?
        package var path: String
    }

    package var rows: Int
    package var blobs: Int
    package var missingBlobs: Int
    package var sizeMismatches: Int
    package var hashMismatches: Int
    package var hashed: Bool
    package var orphanBlobs: Int
    package var tempFiles: Int
    /// 1 when the totals row disagreed with the rows (repair recounts it).
    package var totalsMismatch: Int = 0
    /// Entries under `objects/` that are not blobs by name or type (foreign
    /// files, symlinks): reported, never deleted, not problems.
    package var ignoredFiles: Int = 0
    package var repaired: Int
    /// Live originals without their size and placeholder (stored by an
    /// older artcache, or computed later than they were read): not problems;
    /// `--repair` computes them.
    package var placeholdersMissing: Int = 0
    /// Placeholders `--repair` computed, and originals whose bytes did not decode for one.
    package var placeholdersComputed: Int = 0
    package var placeholdersFailed: Int = 0
    /// The first problems found (at most 100), for people.
    package var problems: [Problem]

    package var problemCount: Int { missingBlobs + sizeMismatches + hashMismatches + orphanBlobs + tempFiles + totalsMismatch }
    /// Problems left after repair.
    package var remaining: Int { max(0, problemCount - repaired) }
}

extension StoreMaintenance {
    /// Checks every row against its blob, inline or file (exists, size, and
    /// with `hash` its SHA-256), the totals against the rows, and finds orphan
    /// blobs and leftover temp files. With `repair`, bad rows are deleted
    /// (with their variants), orphans and dead writers' temp files removed,
    /// the totals recounted.
    ///
    /// The scan (and all hashing) runs on a read snapshot, so writers in this
    /// and other processes keep working meanwhile. Only the repair takes the
    /// write lock, briefly: it re-checks each candidate under the lock (a row
    /// changed or a blob committed since the scan is left alone) and then deletes.
    package func verify(repair: Bool = false, hash: Bool = false) async throws -> VerifyReport {
        try await store.flush()
        let blobs = self.blobs
        let rowsScanned = store.testSeams.withLock { $0.verifyRowsScanned }
        let scan = try await db.read { db in try Self.scan(db, blobs: blobs, hash: hash, rowsScanned: rowsScanned) }
        var report = scan.report
        // A temp file is live while its writer's lock is held (whatever its age or pid).
        let stale = blobs.temporaryFiles().filter { !$0.writerAlive }
        report.tempFiles = stale.count
        for temp in stale { report.note("temp_file", nil, temp.path) }
        guard repair else { return try await confirming(report, scan) }

        let candidates = scan.bad
        let orphans = scan.orphans
        let db = self.db
        // Exclusive cleanup lock: no commit is between unnaming a blob and deleting it.
        let (garbage, cleared) = try await Blocking.run { try blobs.cleanup.exclusive { try db.write { db -> ([String], Set<String>) in
            // Still bad: the row still names the same blob (file names are never
            // reused and files never rewritten, so that file is still missing or
            // wrong); an inline blob is checked again here.
            var badKeys: [String] = []
            var cleared = Set<String>()  // problem paths gone since the scan
            for candidate in candidates {
                if try Self.stillBad(db, candidate, blobs: blobs, hash: hash) {
                    badKeys.append(candidate.key)
                } else {
                    cleared.insert(candidate.path)
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
            if !badKeys.isEmpty { garbage += try EntryRows.deleteEntries(db, keys: badKeys) }
            try db.execute(sql: "DELETE FROM inline_blob WHERE key NOT IN (SELECT key FROM entry WHERE blob IS NULL)")
            try Schema.recount(db).store(db)
            return (garbage, cleared)
        } } }
        for temp in stale { blobs.discardTemporary(temp.path) }
        blobs.remove(garbage)
        // What changed since the scan (a row rewritten, a blob committed) was no problem.
        for candidate in candidates where cleared.contains(candidate.path) { report.uncount(candidate.kind) }
        for orphan in orphans where cleared.contains(orphan) { report.uncount("orphan_blob") }
        report.problems.removeAll { cleared.contains($0.path) }
        report.repaired = report.problemCount
        return report
    }

    /// Without repair, what the snapshot found is confirmed: a blob another
    /// process is committing (renamed inside its open transaction), a file a
    /// commit just unnamed and is deleting, a row just deleted with its file,
    /// are not problems. Under the exclusive cleanup lock and the write lock
    /// no such commit is half done: an orphan is a file no row names that
    /// still exists; a bad row is one that still names the same bad blob.
    private func confirming(_ scanned: VerifyReport, _ scan: (report: VerifyReport, bad: [BadRow], orphans: [String])) async throws
        -> VerifyReport {
        guard !scan.orphans.isEmpty || !scan.bad.isEmpty else { return scanned }
        var report = scanned
        let (db, blobs, orphans, bad) = (self.db, self.blobs, scan.orphans, scan.bad)
        let cleared = try await Blocking.run { () throws -> Set<String> in
            try blobs.cleanup.exclusive {
                try db.write { db -> Set<String> in
                    var cleared = Set<String>()
                    for orphan in orphans {
                        let key = BlobStore.key(ofBlob: orphan)
                        let named = try key.map { try String.fetchOne(db, sql: "SELECT blob FROM entry WHERE key = ?", arguments: [$0]) } ?? nil
                        if named == orphan || blobs.size(of: orphan) == nil { cleared.insert(orphan) }
                    }
                    for candidate in bad where try !Self.stillBad(db, candidate, blobs: blobs, hash: scanned.hashed) {
                        cleared.insert(candidate.path)
                    }
                    return cleared
                }
            }
        }
        for candidate in bad where cleared.contains(candidate.path) { report.uncount(candidate.kind) }
        for orphan in orphans where cleared.contains(orphan) { report.uncount("orphan_blob") }
        report.problems.removeAll { cleared.contains($0.path) }
        return report
    }

    /// A row whose blob was bad when scanned.
    struct BadRow: Sendable {
        let key: String
        let blob: String?
        let kind: String
        /// The file, or `inline:<key>`.
        var path: String { blob ?? "inline:\(key)" }
    }

    /// One pass over a read snapshot: the report, rows whose blob is bad, and
    /// blob files that no row of the snapshot names.
    private static func scan(_ db: Database, blobs: BlobStore, hash: Bool, rowsScanned: (@Sendable () -> Void)? = nil) throws
        -> (report: VerifyReport, bad: [BadRow], orphans: [String]) {
        var report = VerifyReport(rows: 0, blobs: 0, missingBlobs: 0, sizeMismatches: 0, hashMismatches: 0,
                                  hashed: hash, orphanBlobs: 0, tempFiles: 0, repaired: 0, problems: [])
        var referenced = Set<String>()
        var bad: [BadRow] = []
        let rows = try Row.fetchCursor(db, sql: """
            SELECT entry.key, entry.blob, entry.size, entry.sha256, length(inline_blob.data) AS inline_size
            FROM entry LEFT JOIN inline_blob USING (key)
            """)
        while let row = try rows.next() {
            report.rows += 1
            let key: String = row["key"]
            let blob: String? = row["blob"]
            if let blob { referenced.insert(blob) }
            let problem = try check(db, key: key, blob: blob, size: row["size"], sha256: row["sha256"],
                                    inlineSize: row["inline_size"], blobs: blobs, hash: hash)
            guard let problem else { continue }
            let item = BadRow(key: key, blob: blob, kind: problem)
            switch problem {
            case "missing_blob": report.missingBlobs += 1
            case "size_mismatch": report.sizeMismatches += 1
            default: report.hashMismatches += 1
            }
            report.note(problem, key, item.path)
            bad.append(item)
        }
        rowsScanned?()
        let scanned = blobs.scanBlobs()
        let onDisk = scanned.blobs
        report.ignoredFiles = scanned.ignored.count
        let inline = try Int.fetchOne(db, sql: "SELECT count(*) FROM inline_blob") ?? 0
        report.blobs = onDisk.count + inline
        var orphans = onDisk.filter { !referenced.contains($0) }
        report.orphanBlobs = orphans.count
        for orphan in orphans { report.note("orphan_blob", nil, orphan) }
        for key in try String.fetchAll(db, sql: "SELECT key FROM inline_blob WHERE key NOT IN (SELECT key FROM entry WHERE blob IS NULL)") {
            report.orphanBlobs += 1
            report.note("orphan_blob", key, "inline:\(key)")
        }
        orphans.sort()
        if try Schema.totals(db) != Schema.recount(db) {
            report.totalsMismatch = 1
            report.note("totals_mismatch", nil, "index.sqlite")
        }
        return (report, bad, orphans)
    }

    /// The problem with one row's blob, or nil.
    private static func check(_ db: Database, key: String, blob: String?, size: Int64, sha256: String, inlineSize: Int64?,
                              blobs: BlobStore, hash: Bool) throws -> String? {
        if let blob {
            guard let actual = blobs.size(of: blob) else { return "missing_blob" }
            if actual != size { return "size_mismatch" }
            if hash, let data = try blobs.read(blob), CacheKey.sha256Hex(data) != sha256 { return "hash_mismatch" }
            return nil
        }
        guard let inlineSize else { return "missing_blob" }
        if inlineSize != size { return "size_mismatch" }
        if hash, let data = try Data.fetchOne(db, sql: "SELECT data FROM inline_blob WHERE key = ?", arguments: [key]),
           CacheKey.sha256Hex(data) != sha256 { return "hash_mismatch" }
        return nil
    }

    /// Under the write lock: is a row found bad by the scan still bad?
    private static func stillBad(_ db: Database, _ candidate: BadRow, blobs: BlobStore, hash: Bool) throws -> Bool {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT entry.blob, entry.size, entry.sha256, length(inline_blob.data) AS inline_size
            FROM entry LEFT JOIN inline_blob USING (key) WHERE entry.key = ?
            """, arguments: [candidate.key]) else { return false }  // deleted meanwhile
        let blob: String? = row["blob"]
        guard blob == candidate.blob else { return false }  // rewritten meanwhile
        if blob != nil { return true }  // the same file: never rewritten in place
        return try check(db, key: candidate.key, blob: nil, size: row["size"], sha256: row["sha256"],
                         inlineSize: row["inline_size"], blobs: blobs, hash: hash) != nil
    }
}

extension VerifyReport {
    /// Takes back one problem of `kind` found by the scan.
    mutating func uncount(_ kind: String) {
        switch kind {
        case "missing_blob": missingBlobs -= 1
        case "size_mismatch": sizeMismatches -= 1
        case "hash_mismatch": hashMismatches -= 1
        case "totals_mismatch": totalsMismatch -= 1
        default: orphanBlobs -= 1
        }
    }

    mutating func note(_ kind: String, _ key: String?, _ path: String) {
        if problems.count < 100 { problems.append(.init(kind: kind, key: key, path: path)) }
    }
}
