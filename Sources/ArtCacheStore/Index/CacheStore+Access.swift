@_spi(Benchmarks) import ArtCacheCore
import Foundation
internal import GRDB

/// Access times and hit/miss counts gathered in memory and written in batches,
/// so a read does not cost a SQLite write.
struct PendingAccess: Sendable {
    var touches: [String: Date] = [:]
    var hitCounts: [String: Int] = [:]
    var hits: Int64 = 0
    var misses: Int64 = 0

    var isEmpty: Bool { touches.isEmpty && hits == 0 && misses == 0 }

    mutating func take() -> PendingAccess {
        let batch = self
        self = PendingAccess()
        return batch
    }

    mutating func merge(_ other: PendingAccess) {
        for (key, date) in other.touches { touches[key] = max(touches[key] ?? date, date) }
        for (key, count) in other.hitCounts { hitCounts[key, default: 0] += count }
        hits += other.hits
        misses += other.misses
    }
}

extension CacheStore {
    func recordHit(_ entry: CacheEntry, at now: Date = Date(), counting: Bool = true) {
        let due = pending.withLock { state -> Bool in
            if counting { state.hits += 1 }
            state.touches[entry.key] = now
            state.hitCounts[entry.key, default: 0] += 1
            if let parent = entry.parentKey { state.touches[parent] = max(state.touches[parent] ?? now, now) }
            return state.touches.count >= settings.accessFlushBatch
        }
        if due {
            housekeeping.withLock { state in
                guard !state.closed, state.batchFlush == nil else { return }
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
        pending.withLock { $0.touches[key] = now }
    }

    /// Writes batched access times and hit/miss counters to the index.
    package func flush() async throws {
        let batch = pending.withLock { $0.take() }
        guard !batch.isEmpty else { return }
        do {
            try await db.write { db in try Self.apply(batch, db: db) }
        } catch {
            pending.withLock { $0.merge(batch) }  // keep it for the next flush
            throw StoreError(.database, "cannot record access times: \(error)")
        }
    }

    /// ``flush()`` for a thread of the store's own (the commit thread).
    func flushBlocking() throws {
        let batch = pending.withLock { $0.take() }
        guard !batch.isEmpty else { return }
        do {
            try db.write { db in try Self.apply(batch, db: db) }
        } catch {
            pending.withLock { $0.merge(batch) }
            throw StoreError(.database, "cannot record access times: \(error)")
        }
    }

    /// A background flush: a failure keeps the batch for the next flush
    /// (see `flush()`) and is logged, never dropped silently.
    func flushLogging() async {
        do {
            try await flush()
        } catch {
            logger.warning("cannot record access times yet; will retry", metadata: ["error": "\(error)"])
        }
    }

    static func apply(_ batch: PendingAccess, db: Database) throws {
        let statement = try db.cachedStatement(sql: """
            UPDATE entry SET accessed_at = max(accessed_at, ?), hit_count = hit_count + ? WHERE key = ?
            """)
        for (key, date) in batch.touches {
            try statement.execute(arguments: [date.timeIntervalSince1970, batch.hitCounts[key] ?? 0, key])
        }
        try Schema.bump(db, "hits", by: batch.hits)
        try Schema.bump(db, "misses", by: batch.misses)
    }

    func startFlusher() {
        let interval = settings.accessFlushInterval
        guard interval > 0 else { return }
        let task = Task.detached(priority: .utility) { [weak self] in
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
