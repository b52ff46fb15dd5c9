import Foundation
import Testing
@testable import ArtCacheCore

/// The render pool hands a burst over as a batch: jobs queued while every
/// thread is busy are taken by the threads as they finish, with no wake-up.
@Suite("Render pool hand-offs", .timeLimit(.minutes(3)))
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

    /// Background work keeps a share of the pool: behind a stream of
    /// foreground jobs of any priority, a waiting background job (lowest
    /// priority) is handed over after at most `BackgroundShare.foregroundInARow` of them, not
    /// after all (strict priority would starve it).
    @Test func backgroundJobsGetTheirShareUnderForegroundLoad() async throws {
        let threads = WorkerThreads(count: 1, name: "artcache.test.share")
        defer { threads.stop() }
        let release = DispatchSemaphore(value: 0)
        let order = Locked<[String]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await threads.run(priority: PriorityHandle(.veryHigh)) { release.wait() } }
            await threads.waitForLoad { $0.running == 1 }
            group.addTask {
                try await threads.run(priority: PriorityHandle(.veryLow, background: true)) { order.withLock { $0.append("background") } }
            }
            await threads.waitForLoad { $0.waiting == 1 }
            for index in 0..<20 {
                group.addTask {
                    try await threads.run(priority: PriorityHandle(.high)) { order.withLock { $0.append("fg\(index)") } }
                }
            }
            await threads.waitForLoad { $0.waiting == 21 }
            release.signal()
            try await group.waitForAll()
        }
        let ran = order.withLock { $0 }
        #expect(ran.count == 21)
        let position = try #require(ran.firstIndex(of: "background"))
        #expect(position == BackgroundShare.foregroundInARow, "\(ran)")
    }

    /// Without waiting background work, priority alone decides (a lone
    /// low foreground job still waits for every higher one).
    @Test func foregroundOrderIsStrictPriority() async throws {
        let threads = WorkerThreads(count: 1, name: "artcache.test.strict")
        defer { threads.stop() }
        let release = DispatchSemaphore(value: 0)
        let order = Locked<[String]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await threads.run(priority: PriorityHandle(.veryHigh)) { release.wait() } }
            await threads.waitForLoad { $0.running == 1 }
            group.addTask { try await threads.run(priority: PriorityHandle(.veryLow)) { order.withLock { $0.append("low") } } }
            await threads.waitForLoad { $0.waiting == 1 }
            for index in 0..<10 {
                group.addTask { try await threads.run(priority: PriorityHandle(.high)) { order.withLock { $0.append("fg\(index)") } } }
            }
            await threads.waitForLoad { $0.waiting == 11 }
            release.signal()
            try await group.waitForAll()
        }
        #expect(order.withLock { $0 }.last == "low")
    }
}
