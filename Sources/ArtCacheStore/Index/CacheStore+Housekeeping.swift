import ArtCacheCore
import Foundation
internal import GRDB

/// The reclaimer: deletes the rows an eviction left below the horizon
/// (counted out already, invisible to reads), with their inline bytes and
/// files, in chunks of ``reclaimChunk`` rows, one transaction each, on the
/// blocking pool. Puts and other writers take the write lock between
/// chunks, so a large eviction never holds them up for long.
///
/// One runs per store at a time; an eviction during its run makes it look
/// again before it ends. A process stopped halfway leaves evicted rows (still
/// counted out, still invisible): the next store to check its limits on the
/// cache starts a reclaimer for them. Variants still live whose original was
/// evicted go with it here, and are counted out then.
extension CacheStore {
    /// What the store's background work shares, under ``housekeeping``.
    struct Housekeeping {
        var lastAgeSweep: Date = .distantPast
        var flusher: Task<Void, Never>?
        /// A flush started because the batch grew large, if one runs.
        var batchFlush: Task<Void, Never>?
        /// Automatic flushes wait while flushes fail.
        var flushBackoff = FlushBackoff()
        /// A reclaimer job is queued or runs.
        var reclaiming = false
        /// An eviction happened since the reclaimer last looked.
        var reclaimWanted = false
        /// A touch-log fold job is queued or runs.
        var folding = false
        /// Jobs submitted so far: each run of a job has a key of its own
        /// (the flags above, under this lock, are what keep them one at a time).
        var jobRuns = 0
        var closed = false
    }

    /// Rows deleted per transaction.
    static let reclaimChunk = 5000

    /// Starts the reclaimer (a job of the background scheduler) unless one
    /// is queued or runs (then it looks again before it ends).
    func startReclaim() {
        housekeeping.withLock { $0.reclaimWanted = true }
        startJob(.reclaim, flag: \.reclaiming) { [self] in await reclaimLoop() }
    }

    /// What this store's jobs are keyed by in a shared scheduler: its cache folder.
    var jobScope: String { directory.path }

    /// Queues the store's job of `kind` unless `flag` says one is queued or
    /// runs; the job (or its refusal: closing, dropped past a bound) clears
    /// the flag, and the next trigger starts it again. Each run has a key of
    /// its own: the flag, under the housekeeping lock, keeps them one at a time.
    func startJob(_ kind: BackgroundKind, flag: WritableKeyPath<Housekeeping, Bool> & Sendable,
                  _ body: @escaping @Sendable () async -> Void) {
        let run = housekeeping.withLock { state -> Int? in
            guard !state.closed, !state[keyPath: flag] else { return nil }
            state[keyPath: flag] = true
            state.jobRuns += 1
            return state.jobRuns
        }
        guard let run else { return }
        let clear: @Sendable () -> Void = { [self] in housekeeping.withLock { $0[keyPath: flag] = false } }
        let outcome = background.submit(BackgroundJobKey(kind, key: jobScope, spec: String(run)), priority: .low, onDrop: clear, body)
        if outcome != .queued { clear() }
    }

    private func reclaimLoop() async {
        while true {
            let go = housekeeping.withLock { state -> Bool in
                guard state.reclaimWanted, !state.closed, !Task.isCancelled else {
                    state.reclaiming = false
                    return false
                }
                state.reclaimWanted = false
                return true
            }
            guard go else { return }
            do {
                while try await Blocking.run({ try self.blobs.cleanup.shared { try self.reclaimChunkBlocking() } }) {}
            } catch is CancellationError {
                continue  // closing: the loop's check ends it
            } catch {
                logger.warning("cannot delete evicted items yet; the next eviction retries",
                               metadata: ["error": "\(error)"])
                housekeeping.withLock { $0.reclaimWanted = false }
            }
        }
    }

    /// Deletes one chunk of evicted rows (and live variants of evicted
    /// originals, counted out here); unlinks their files after the commit.
    /// Returns whether there may be more.
    func reclaimChunkBlocking() throws -> Bool {
        let (starting, rows) = testSeams.withLock { ($0.reclaimChunkStarting, $0.reclaimChunkRows) }
        starting?()
        let chunk = max(1, rows ?? Self.reclaimChunk)
        let (files, more) = try writeMakingRoomBlocking { db -> ([String], Bool) in
            try EntryRows.clearVictims(db)
            try db.cachedStatement(sql: """
                INSERT INTO temp.victim (key) SELECT key FROM entry INDEXED BY entry_lru
                WHERE accessed_at < (SELECT horizon FROM totals WHERE id = 1) ORDER BY accessed_at LIMIT ?
                """).execute(arguments: [chunk])
            let chosen = db.changesCount
            let (files, removed, _) = try EntryRows.deleteVictims(db)
            try Schema.bump(db, "evictions", by: Int64(removed.entries))
            try Schema.bump(db, "evicted_bytes", by: removed.bytes)
            return (files, chosen == chunk)
        }
        blobs.remove(files)
        if !more { try reclaimSpace() }
        return more
    }

    /// Returns once no reclaimer is queued or runs (tests, benchmarks).
    package func waitForReclaim() async {
        await background.waitUntilIdle(.reclaim)
    }
}

/// The touch log's fold, in the background (``TouchLog``).
extension CacheStore {
    /// Distinct keys folded per transaction (a flush's worth, as before the log).
    static let touchLogFoldChunk = 4096
    /// At most this many rows are folded by `close()` (in one transaction);
    /// a larger log is left for the next store's background fold.
    static let touchLogCloseFoldRows = 8192

    /// Rows in the touch log that start a background fold (`[cache] touch_log_fold_rows`).
    var touchLogFoldRows: Int { testSeams.withLock { $0.touchLogFoldRows } ?? settings.touchLogFoldRows }

    /// Starts folding the touch log (a job of the background scheduler)
    /// unless a fold is queued or runs.
    func startFold() {
        startJob(.touchLogFold, flag: \.folding) { [self] in
            await foldLogging()
            housekeeping.withLock { $0.folding = false }
        }
    }

    private func foldLogging() async {
        do {
            try await foldTouchLog()
        } catch is CancellationError {
            return  // closing: what is left waits for the next fold
        } catch {
            logger.warning("cannot fold access times into the index yet; the next flush retries",
                           metadata: ["error": "\(error)"])
        }
    }

    /// Folds the whole touch log into the index, a range of keys per
    /// transaction (``touchLogFoldChunk`` distinct keys): puts and lookups
    /// go between chunks. Rows appended meanwhile wait for the next fold.
    package func foldTouchLog() async throws {
        let chunk = testSeams.withLock { $0.touchLogFoldChunk } ?? Self.touchLogFoldChunk
        let bounds = try await Blocking.run { try self.db.read { try TouchLog.boundaries($0, chunk: chunk) } }
        var lower: String?
        for upper in bounds.map(Optional.some) + [nil] {
            try Task.checkCancellation()
            if housekeeping.withLock({ $0.closed }) { throw CancellationError() }
            let range = (lower, upper)
            _ = try await Blocking.run { try self.db.write { db in try TouchLog.fold(db, from: range.0, to: range.1) } }
            lower = upper
        }
    }

    /// At close: folds a small log (at most ``touchLogCloseFoldRows`` rows)
    /// in one transaction, so a short-lived process (a CLI command) leaves
    /// its rows up to date. Access times are approximate by contract: a
    /// failure is logged, never the command's.
    /// An empty log takes no write lock: a read-only command (`stats`,
    /// `get`) never waits for a writer at close.
    func foldSmallTouchLogBlocking() {
        do {
            let bound = try db.read { try TouchLog.rowBound($0) }
            guard (1...Self.touchLogCloseFoldRows).contains(bound) else { return }
            try db.write { db in
                guard try TouchLog.rowBound(db) <= Self.touchLogCloseFoldRows else { return }
                try TouchLog.fold(db)
            }
        } catch {
            logger.warning("access times left in the touch log at close", metadata: ["error": "\(error)"])
        }
    }
}
