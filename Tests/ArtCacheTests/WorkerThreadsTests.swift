import Foundation
import Testing
@_spi(Benchmarks) @testable import ArtCacheCore

/// The render pool hands a burst over as a batch: jobs queued while every
/// thread is busy are taken by the threads as they finish, with no wake-up.
@Suite("Render pool hand-offs", .timeLimit(.minutes(1)))
struct WorkerThreadsTests {
    @Test func aBurstQueuedWhileEveryThreadIsBusyIsTakenWithoutAWakeUp() async throws {
        let threads = WorkerThreads(count: 2, name: "artcache.test.handoff")
        defer { threads.stop() }
        let release = DispatchSemaphore(value: 0)
        try await withThrowingTaskGroup(of: Int.self) { group in
            // Both threads busy, blocked until released.
            for index in 0..<2 {
                group.addTask { try await threads.run(priority: PriorityHandle(.normal)) { release.wait(); return index } }
            }
            await threads.waitForLoad { $0.running == 2 }
            let before = threads.handoffCounts
            #expect(before.jobs == 2 && before.wakeups <= 2)
            // A burst of 100 queues up behind them.
            for index in 2..<102 {
                group.addTask { try await threads.run(priority: PriorityHandle(.normal)) { index } }
            }
            await threads.waitForLoad { $0.waiting == 100 }
            #expect(threads.handoffCounts == before, "nothing taken or woken while both threads are busy")
            release.signal()
            release.signal()
            var done = Set<Int>()
            for try await index in group { done.insert(index) }
            #expect(done == Set(0..<102))
            let after = threads.handoffCounts
            #expect(after.jobs == 102)
            #expect(after.wakeups == before.wakeups, "the 100 were taken by threads finishing a job, none woke for them")
        }
    }
}
