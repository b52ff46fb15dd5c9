@testable import ArtCacheCore
import Foundation
import Testing

/// Priorities travel through shared flights while callers come, go and
/// change their minds: the coalescer updates a flight's priority under its
/// own lock (so concurrent updates cannot leave a stale value) and the
/// handle's observers (the render queue here) take their own locks inside
/// it: lock order coalescer → priority handle → render queue, never back.
@Suite("Coalescer priorities", .timeLimit(.minutes(3)))  // 3: under TSan the whole suite shares 2 cores
struct CoalescerPriorityTests {
    @Test func raisingAndLoweringFromManyTasksWhileFlightsCompleteNeitherDeadlocksNorGoesStale() async throws {
        let coalescer = Coalescer<String, Int>()
        let threads = WorkerThreads(count: 2, name: "artcache.test.priority")
        defer { threads.stop() }
        for round in 0..<8 {
            let gate = Gate()
            let (started, start) = AsyncStream.makeStream(of: PriorityHandle.self)
            let handles = (0..<40).map { PriorityHandle(ImagePriority.allCases[$0 % 5]) }
            let results = try await withThrowingTaskGroup(of: Int.self) { group -> [Int] in
                for handle in handles {
                    group.addTask {
                        try await coalescer.run(key: "k\(round)", priority: handle) { priority in
                            start.yield(priority)
                            await gate.wait()
                            // A job on the render queue observes the flight's priority.
                            return try await threads.run(priority: priority) { round }
                        }
                    }
                }
                var flights = started.makeAsyncIterator()
                let flight = try #require(await flights.next())  // the one flight has started
                await coalescer.joins.waitInTest { $0 >= (round + 1) * handles.count }  // and every caller has joined it
                // Callers change their priorities from many tasks at once.
                await withTaskGroup(of: Void.self) { changes in
                    for (index, handle) in handles.enumerated() {
                        changes.addTask {
                            for step in 0..<25 { handle.value = ImagePriority.allCases[(index * 7 + step * 3) % 5] }
                        }
                    }
                }
                // Everyone ends low but one, which ends high: the flight follows the highest.
                for handle in handles { handle.value = .veryLow }
                handles[17].value = .high
                #expect(flight.value == .high, "round \(round)")
                handles[17].value = .low
                #expect(flight.value == .low, "round \(round)")
                gate.open()
                var results: [Int] = []
                for try await result in group { results.append(result) }
                return results
            }
            #expect(results == Array(repeating: round, count: 40))
            #expect(coalescer.inFlight == 0)
        }
    }
}
