/// A dictionary behind a lock that starts over when it is full: for values
/// that are cheap to make again and asked for again and again (parsed paths,
/// negotiated formats, kept answers, resampler taps). A full memo forgets
/// everything at once, which costs one miss per key and keeps no eviction
/// order: the memos of the hot paths were this, written out six times.
///
/// `Sendable`: its only state is a ``Locked``. `@inlinable`: specialized
/// where it is used (a memory hit reads two memos).
package final class BoundedMemo<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline let entries = Locked<[Key: Value]>([:])
    /// Entries kept at most.
    package let capacity: Int

    @inlinable package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    @inlinable
    package subscript(key: Key) -> Value? {
        entries.withLock { $0[key] }
    }

    /// Keeps `value` for `key` (after forgetting everything when full).
    @inlinable
    package func store(_ value: Value, for key: Key) {
        entries.withLock { memo in
            if memo.count >= capacity, memo[key] == nil { memo.removeAll(keepingCapacity: true) }
            memo[key] = value
        }
    }

    /// The value kept for `key`, else `make()`'s, kept (made outside the
    /// lock: two callers may both make it; the last one stays).
    @inlinable
    package func value<E: Error>(for key: Key, _ make: () throws(E) -> Value) throws(E) -> Value {
        if let known = self[key] { return known }
        let made = try make()
        store(made, for: key)
        return made
    }

    /// Keeps `value` for `key` unless one is kept: true when this call kept it.
    @inlinable
    package func claim(_ key: Key, _ value: Value) -> Bool {
        entries.withLock { memo in
            guard memo[key] == nil else { return false }
            if memo.count >= capacity { memo.removeAll(keepingCapacity: true) }
            memo[key] = value
            return true
        }
    }

    package func remove(_ key: Key) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    package var count: Int { entries.withLock { $0.count } }
}
