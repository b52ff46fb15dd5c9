import ArtCacheCore
import Foundation
internal import GRDB

/// Access times and hit/miss counts gathered in memory and written in batches,
/// so a read does not cost a SQLite write.
///
/// Bounded: at most `capacity` touched keys (``CacheStore/pendingCapacity``).
/// While flushes fail (a full disk) the batch is kept for the next attempt;
/// when it is full, the oldest quarter of its touches (by access time) is
/// dropped in one pass and counted in `dropped`: the newest survive, and a
/// touch costs O(log n) amortized. Hit and miss totals are plain counters.
struct PendingAccess: Sendable {
    var touches: [String: Date] = [:]
    var hitCounts: [String: Int] = [:]
    var hits: Int64 = 0
    var misses: Int64 = 0
    /// Touches dropped because the batch was full (logged when a flush succeeds).
    var dropped = 0
    /// Puts behind the answer not stored (``WriteBehind``): `writes_dropped`.
    var writesDropped: Int64 = 0

    var isEmpty: Bool { touches.isEmpty && hits == 0 && misses == 0 && writesDropped == 0 }

    mutating func take() -> PendingAccess {
        let batch = self
        self = PendingAccess()
        return batch
    }

    mutating func merge(_ other: PendingAccess, capacity: Int) {
        for (key, date) in other.touches { touches[key] = max(touches[key] ?? date, date) }
        for (key, count) in other.hitCounts { hitCounts[key, default: 0] += count }
        hits += other.hits
        misses += other.misses
        writesDropped += other.writesDropped
        dropped += other.dropped
        bound(capacity)
    }

    /// Marks `key` used at `date` (a hit counts it too), within `capacity` keys.
    mutating func touch(_ key: String, at date: Date, hit: Bool = false, capacity: Int) {
        touches[key] = max(touches[key] ?? date, date)
        if hit { hitCounts[key, default: 0] += 1 }
        bound(capacity)
    }

    /// Over `capacity` keys: drops the oldest touches down to three quarters of it.
    private mutating func bound(_ capacity: Int) {
        guard touches.count > capacity else { return }
        let excess = touches.count - max(1, capacity * 3 / 4)
        for (key, _) in touches.sorted(by: { $0.value < $1.value }).prefix(excess) {
            touches[key] = nil
            hitCounts[key] = nil
        }
        dropped += excess
    }
}

/// Automatic flushes (every `access_flush_interval`, or when a batch is
/// full) back off while they fail: the first failure waits 1 s, each further
/// one twice as long, up to 60 s; a success ends it. Without it, a failing
/// flush (SQLITE_FULL) was retried on every hit once the kept batch was full.
/// Explicit flushes (``CacheStore/flush()``, `close()`) always try.
struct FlushBackoff: Sendable {
    static let first: TimeInterval = 1
    static let longest: TimeInterval = 60

    private(set) var delay: TimeInterval = 0
    private(set) var retryAt: Date = .distantPast

    func allows(_ now: Date) -> Bool { now >= retryAt }

    mutating func failed(at now: Date) {
        delay = delay == 0 ? Self.first : min(delay * 2, Self.longest)
        retryAt = now.addingTimeInterval(delay)
    }

    mutating func succeeded() { self = FlushBackoff() }
}
