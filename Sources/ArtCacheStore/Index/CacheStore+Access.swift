import ArtCacheCore
import Foundation
internal import GRDB

extension CacheStore {
    /// Most keys the pending batch holds: twice the flush batch (what
    /// `access_flush_batch` already lets gather), at least 4096.
    var pendingCapacity: Int { max(2 * settings.accessFlushBatch, 4096) }

    func recordHit(_ entry: CacheEntry, at now: Date = Date(), counting: Bool = true) {
        let capacity = pendingCapacity
        let due = pending.withLock { state -> Bool in
            if counting { state.hits += 1 }
            state.touch(entry.key, at: now, hit: true, capacity: capacity)
            if let parent = entry.parentKey { state.touch(parent, at: now, capacity: capacity) }
            return state.touches.count >= settings.accessFlushBatch
        }
        if due {
            housekeeping.withLock { state in
                guard !state.closed, state.batchFlush == nil, state.flushBackoff.allows(now) else { return }
                state.batchFlush = Task {
                    await self.flushLogging()
                    self.housekeeping.withLock { $0.batchFlush = nil }
                }
            }
        }
    }

    func recordMiss() {
        pending.withLock { $0.misses += 1 }
    }

    /// Counts a put behind the answer that was not stored (`writes_dropped`).
    func recordDroppedWrite() {
        pending.withLock { $0.writesDropped += 1 }
    }

    /// Counts one request that reached the disk tier: a hit when the disk
    /// answered it as stored, else a miss (the pipeline's lookups do not
    /// count themselves: a cold thumbnail is one miss, not one per lookup).
    package func recordRequest(hit: Bool) {
        pending.withLock { state in
            if hit { state.hits += 1 } else { state.misses += 1 }
        }
    }

    /// Marks an item used now without counting a hit (e.g. after a revalidation).
    func touch(_ key: String, at now: Date = Date()) {
        let capacity = pendingCapacity
        pending.withLock { $0.touch(key, at: now, capacity: capacity) }
    }

    /// Writes batched access times and hit/miss counters to the index.
    package func flush() async throws {
        let batch = pending.withLock { $0.take() }
        guard !batch.isEmpty else { return }
        let logRows: Int
        do {
            logRows = try await db.write { db in try Self.apply(batch, db: db) }
        } catch {
            throw flushFailed(batch, error)
        }
        flushSucceeded(batch, logRows: logRows)
    }

    /// ``flush()`` for a thread of the store's own (the commit thread, the blocking pool).
    func flushBlocking() throws {
        let batch = pending.withLock { $0.take() }
        guard !batch.isEmpty else { return }
        let logRows: Int
        do {
            logRows = try db.write { db in try Self.apply(batch, db: db) }
        } catch {
            throw flushFailed(batch, error)
        }
        flushSucceeded(batch, logRows: logRows)
    }

    /// A failed flush keeps its batch for the next one (bounded) and, unless
    /// it was only cancelled, makes automatic flushes back off.
    private func flushFailed(_ batch: PendingAccess, _ error: any Error) -> any Error {
        let capacity = pendingCapacity
        pending.withLock { $0.merge(batch, capacity: capacity) }
        if error is CancellationError { return error }  // the caller's cancellation, not the disk's trouble
        housekeeping.withLock { $0.flushBackoff.failed(at: Date()) }
        let sqlite = error as? DatabaseError
        let code: StoreError.Code = sqlite?.resultCode == .SQLITE_FULL ? .storageFull : .database
        return StoreError(code, "cannot record access times: \(error)", sqliteCode: sqlite?.extendedResultCode.rawValue)
    }

    private func flushSucceeded(_ batch: PendingAccess, logRows: Int) {
        housekeeping.withLock { $0.flushBackoff.succeeded() }
        if logRows >= touchLogFoldRows { startFold() }
        if batch.dropped > 0 {
            logger.warning("access times dropped while flushes failed (the pending batch was full)",
                           metadata: ["touches": "\(batch.dropped)"])
        }
    }

    /// A background flush: skipped while backing off (``FlushBackoff``); a
    /// failure keeps the batch for the next flush and is logged, never
    /// dropped silently.
    func flushLogging() async {
        guard housekeeping.withLock({ $0.flushBackoff.allows(Date()) }) else { return }
        do {
            try await flush()
        } catch is CancellationError {
            return  // close() flushes what is left
        } catch {
            let delay = housekeeping.withLock { $0.flushBackoff.delay }
            logger.warning("cannot record access times yet; will retry", metadata: ["error": "\(error)", "retry_in_s": "\(delay)"])
        }
    }

    /// Appends the batch's touches to the touch log (``TouchLog``) and
    /// adds its counters. The rows themselves are written when the log is
    /// folded into them, or rescued by an eviction. Returns about how many
    /// rows the log holds (an upper bound).
    static func apply(_ batch: PendingAccess, db: Database) throws -> Int {
        let logRows = try TouchLog.append(batch.touches, hits: batch.hitCounts, db: db)
        try Schema.bump(db, "hits", by: batch.hits)
        try Schema.bump(db, "misses", by: batch.misses)
        try Schema.bump(db, "writes_dropped", by: batch.writesDropped)
        return logRows
    }

    func startFlusher() {
        let interval = settings.accessFlushInterval
        guard interval > 0 else { return }
        // The store's one flusher: owned by `housekeeping` (close() cancels
        // it, then flushes itself), one per store, a timer and a flush.
        let task = Task(priority: .utility) { [weak self] in
            while !Task.isCancelled {
                do {
                    try await Task.sleep(nanoseconds: UInt64(interval * 1_000_000_000))
                } catch {
                    return  // cancelled by close(), which flushes itself
                }
                guard let self else { return }
                await self.flushLogging()
            }
        }
        housekeeping.withLock { $0.flusher = task }
    }
}
