/// Ids in arrival order, first in first out, where an id that stops waiting
/// (taken by another way, cancelled, dropped, moved to another queue) is
/// not searched for and removed but skipped when the queue reaches it:
/// leaving costs nothing. The owner says which ids still wait (a table of
/// waiting jobs). The consumed front is let go when the queue runs dry, or
/// once it is over ``compactAfter`` ids and more than half the storage.
///
/// The queues of the render pool (``WorkerThreads``: per priority, and its
/// background jobs) and of the ``BackgroundScheduler`` (per kind and priority).
package struct ArrivalQueue: Sendable {
    private var ids: [Int] = []
    /// The first id not consumed yet.
    private var head = 0

    /// Consumed ids kept at most before the front is let go (when it is
    /// also more than half the storage).
    package static let compactAfter = 1024

    package init() {}

    package mutating func append(_ id: Int) { ids.append(id) }

    /// Ids not consumed yet, waiting or not (tests).
    package var pending: Int { ids.count - head }

    /// The first id that still `waits`, left in the queue; the ids before
    /// it (no longer waiting) are consumed.
    package mutating func first(where waits: (Int) -> Bool) -> Int? {
        while head < ids.count {
            let id = ids[head]
            if waits(id) {
                compact()
                return id
            }
            head += 1
        }
        compact()
        return nil
    }

    /// ``first(where:)``, consumed.
    package mutating func popFirst(where waits: (Int) -> Bool) -> Int? {
        guard let id = first(where: waits) else { return nil }
        head += 1
        compact()
        return id
    }

    /// ``first(where:)`` of the ids with an entry in `waiting`. The table
    /// comes by value: a closure reading it from the owner's state while
    /// that state's queue is being mutated would be an exclusivity violation.
    package mutating func first<Value>(in waiting: [Int: Value]) -> Int? {
        first { waiting[$0] != nil }
    }

    /// ``first(in:)``, consumed.
    package mutating func popFirst<Value>(in waiting: [Int: Value]) -> Int? {
        popFirst { waiting[$0] != nil }
    }

    private mutating func compact() {
        if head == ids.count {
            ids.removeAll(keepingCapacity: true)
            head = 0
        } else if head > Self.compactAfter, head * 2 > ids.count {
            ids.removeFirst(head)
            head = 0
        }
    }
}
