import Testing
@testable import ArtCacheCore

/// Ids in arrival order, ids no longer waiting skipped when met.
@Suite("Arrival queue")
struct ArrivalQueueTests {
    @Test func idsComeOutInArrivalOrderSkippingThoseNoLongerWaiting() {
        var queue = ArrivalQueue()
        for id in 1...5 { queue.append(id) }
        var waiting: Set<Int> = [1, 2, 3, 4, 5]
        waiting.remove(1)  // cancelled
        waiting.remove(3)
        #expect(queue.first { waiting.contains($0) } == 2, "peeked, not consumed")
        #expect(queue.first { waiting.contains($0) } == 2)
        #expect(queue.popFirst { waiting.contains($0) } == 2)
        waiting.remove(2)
        #expect(queue.popFirst { waiting.contains($0) } == 4)
        waiting.remove(4)
        queue.append(6)
        waiting.insert(6)
        #expect(queue.popFirst { waiting.contains($0) } == 5)
        #expect(queue.popFirst { waiting.contains($0) } == 6)
        #expect(queue.popFirst { _ in true } == nil)
        #expect(queue.pending == 0)
    }

    @Test func aTableOfWaitingJobsSaysWhichIdsWait() {
        var queue = ArrivalQueue()
        for id in [7, 8, 9] { queue.append(id) }
        var table: [Int: String] = [8: "b", 9: "c"]
        #expect(queue.first(in: table) == 8)
        #expect(queue.pending == 2, "the stale 7 was consumed on the way")
        #expect(queue.popFirst(in: table) == 8)
        table[8] = nil
        table[9] = nil
        #expect(queue.first(in: table) == nil)
        #expect(queue.pending == 0, "run dry: nothing kept")
    }

    /// The consumed front is let go once it is large, and the order holds across it.
    @Test func theConsumedFrontIsLetGoAndOrderHolds() {
        var queue = ArrivalQueue()
        let total = ArrivalQueue.compactAfter * 3
        for id in 0..<total { queue.append(id) }
        var taken: [Int] = []
        for _ in 0..<(total - 10) {
            guard let id = queue.popFirst(where: { _ in true }) else { break }
            taken.append(id)
            queue.append(total + id)  // keeps arriving meanwhile
        }
        #expect(taken == Array(0..<(total - 10)))
        #expect(queue.pending == 10 + total - 10)
        #expect(queue.popFirst { _ in true } == total - 10)
    }
}
