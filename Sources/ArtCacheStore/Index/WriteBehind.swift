import ArtCacheCore
import Foundation

/// Store-behind: the puts nobody waits for (``CacheStore/putBehind(url:data:contentType:declaredType:repaired:validators:now:)``,
/// ``CacheStore/putVariantBehind(parent:spec:data:contentType:width:height:now:)``),
/// from the moment they are accepted until their group commit ended.
///
/// Bounded (`[cache] write_behind_max` puts): a put that finds it full is
/// not written at all and is counted (`writes_dropped`); so are accepted
/// puts whose write then failed. While a put is pending its row and bytes
/// are found here first, so this process reads what it just answered (a
/// second request for the image never downloads it again), and a variant
/// waits for its original's commit before it is written (the commit checks
/// that the original is there).
final class WriteBehind: Sendable {
    enum Admission: Sendable, Equatable {
        /// Taken: write it, then ``finish(_:id:)``.
        case admitted(UInt64)
        /// The queue is full: not written (counted).
        case full
        /// A put of the same key is still pending: write this one through
        /// (awaited), after that one, so the two never commit out of order.
        case busy
    }

    private struct Slot: Sendable {
        let id: UInt64
        let entry: CacheEntry
        let data: Data
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private struct State: Sendable {
        var slots: [String: Slot] = [:]
        var nextID: UInt64 = 1
        /// Dropped since this store opened (for /metrics; the index's
        /// `writes_dropped` counter gets them through the access batch).
        var droppedTotal: Int64 = 0
        var accepted: Int64 = 0
    }

    private let state = Locked(State())
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// Takes `entry` (with its bytes) as pending, or says why not.
    func admit(_ entry: CacheEntry, data: Data) -> Admission {
        state.withLock { state in
            guard state.slots[entry.key] == nil else { return .busy }
            guard state.slots.count < capacity else {
                state.droppedTotal += 1
                return .full
            }
            let id = state.nextID
            state.nextID += 1
            state.accepted += 1
            state.slots[entry.key] = Slot(id: id, entry: entry, data: data)
            return .admitted(id)
        }
    }

    /// The put `id` of `key` committed (`stored`) or failed (counted as dropped).
    func finish(_ key: String, id: UInt64, stored: Bool) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if !stored { state.droppedTotal += 1 }
            guard let slot = state.slots[key], slot.id == id else { return [] }
            state.slots[key] = nil
            return slot.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The pending row of `key` and its bytes, if a put of it is pending.
    func find(_ key: String) -> (entry: CacheEntry, data: Data)? {
        state.withLock { state in state.slots[key].map { ($0.entry, $0.data) } }
    }

    /// The key of some pending put (nil: none is pending).
    func anyPendingKey() -> String? {
        state.withLock { $0.slots.keys.first }
    }

    /// Returns once no put of `key` is pending (at once when none is).
    func waitUntilWritten(_ key: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let pending = state.withLock { state -> Bool in
                guard state.slots[key] != nil else { return false }
                state.slots[key]?.waiters.append(continuation)
                return true
            }
            if !pending { continuation.resume() }
        }
    }

    /// Puts pending now, accepted and dropped since the store opened.
    var activity: (pending: Int, accepted: Int64, dropped: Int64) {
        state.withLock { ($0.slots.count, $0.accepted, $0.droppedTotal) }
    }
}
