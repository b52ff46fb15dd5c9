@_spi(Benchmarks) import ArtCacheCore
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
            try Self.clearVictims(db)
            try db.cachedStatement(sql: """
                INSERT INTO temp.victim (key) SELECT key FROM entry INDEXED BY entry_lru
                WHERE accessed_at < (SELECT horizon FROM totals WHERE id = 1) ORDER BY accessed_at LIMIT ?
                """).execute(arguments: [chunk])
            let chosen = db.changesCount
            let (files, removed, _) = try Self.deleteVictims(db)
            try Schema.bump(db, "evictions", by: Int64(removed.entries))
            try Schema.bump(db, "evicted_bytes", by: removed.bytes)
            return (files, chosen == chunk)
        }
        blobs.remove(files)
        if !more { try reclaimSpace() }
        return more
    }

    /// Whether evicted rows wait for the reclaimer (one probe of `entry_lru`).
    static func hasEvictedRows(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: """
            SELECT EXISTS (SELECT 1 FROM entry INDEXED BY entry_lru
                           WHERE accessed_at < (SELECT horizon FROM totals WHERE id = 1))
            """)) ?? false
    }

    /// Returns once no reclaimer is queued or runs (tests, benchmarks).
    @_spi(Benchmarks) public func waitForReclaim() async {
        await background.waitUntilIdle(.reclaim)
    }
}
