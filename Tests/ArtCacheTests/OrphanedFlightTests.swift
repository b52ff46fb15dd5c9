@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheStore
import Foundation
import Testing

/// Issue 58, code-read item: a flight adopted by an `orphaned_flight` job is
/// joined by a second requester, who leaves too (its deadline, its client
/// gone). Offered again, the job key is the same, the scheduler answers
/// `.duplicate` — and the flight the first job still waits for must not be
/// abandoned for it: it is finished and stored. The first job is queued
/// behind running ones (with an idle scheduler it would already be running,
/// and the flight might end before the second requester leaves).
@Suite("Orphaned flights adopted once", .timeLimit(.minutes(1)))
struct OrphanedFlightTests {
    /// A scheduler of one slot, taken by a job that waits for the returned gate.
    static func busyScheduler() async -> (BackgroundScheduler, BackgroundSchedulerTests.Gate) {
        var settings = BackgroundSettings()
        settings.concurrency = 1
        let scheduler = BackgroundScheduler(settings: settings, kinds: [.orphanedFlight])
        let blocker = BackgroundSchedulerTests.Gate()
        scheduler.submit(BackgroundJobKey(.reclaim, key: "blocker"), priority: .veryHigh) { await blocker.wait() }
        await untilCancelled { await scheduler.waitForLoad { $0.running == 1 } }
        return (scheduler, blocker)
    }

    /// The coalescer with the pipeline's adopter over a real scheduler whose
    /// one slot is taken: the flight is left, joined and left again while
    /// its job waits; it is not cancelled and its result is the job's.
    @Test func aFlightLeftTwiceWhileItsJobWaitsIsNotAbandoned() async throws {
        let (scheduler, blocker) = await Self.busyScheduler()
        let coalescer = Coalescer<String, Int>(adopt: ImagePipeline.adopter(scheduler))
        let work = Gate()
        let outcome = Locked<String?>(nil)
        let operation: @Sendable (PriorityHandle) async throws -> Int = { _ in
            await work.wait()
            outcome.withLock { $0 = Task.isCancelled ? "cancelled" : "finished" }
            try Task.checkCancellation()
            return 7
        }
        func requester() -> Task<Int, Error> {
            Task {
                try await Orphans.$finish.withValue(true) {
                    try await coalescer.run(key: "k", priority: PriorityHandle(.normal), operation: operation)
                }
            }
        }
        let first = requester()
        await coalescer.joins.waitInTest { $0 >= 1 }
        first.cancel()  // its deadline: the flight goes to an orphaned_flight job, queued behind the blocker
        await #expect(throws: CancellationError.self) { try await first.value }
        #expect(scheduler.counts[.orphanedFlight]?.queued == 1)
        let second = requester()
        await coalescer.joins.waitInTest { $0 >= 2 }  // it joined the adopted flight
        second.cancel()  // and left it too
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(coalescer.inFlight == 1, "the flight the queued job waits for is still there")
        work.open()
        blocker.release()
        await untilCancelled { await scheduler.waitUntilIdle(.orphanedFlight) }
        #expect(outcome.withLock { $0 } == "finished", "the flight ran to its end, not cancelled")
        #expect(coalescer.inFlight == 0)
        await scheduler.close()
    }

    /// A flight that ended while its job still waits, then the key's next
    /// flight left by its caller: that one is adopted too (its own job),
    /// not declined as a `.duplicate` of the first one's and cancelled.
    @Test func theKeysNextFlightIsAdoptedWhileTheFirstOnesJobWaits() async throws {
        let (scheduler, blocker) = await Self.busyScheduler()
        let coalescer = Coalescer<String, Int>(adopt: ImagePipeline.adopter(scheduler))
        let (ended, end) = AsyncStream.makeStream(of: String.self)
        func flight(_ gate: Gate, _ name: String) -> Task<Int, Error> {
            Task {
                try await Orphans.$finish.withValue(true) {
                    try await coalescer.run(key: "k", priority: PriorityHandle(.normal)) { _ in
                        await gate.wait()
                        end.yield(Task.isCancelled ? "\(name) cancelled" : "\(name) finished")
                        return 1
                    }
                }
            }
        }
        var endings = ended.makeAsyncIterator()
        let (firstGate, secondGate) = (Gate(), Gate())
        let first = flight(firstGate, "first")
        await coalescer.joins.waitInTest { $0 >= 1 }
        first.cancel()
        _ = await first.result
        // A caller that waits for the first flight to its end (it returns
        // once the flight is gone from the coalescer): the flight ends on
        // its own while its job still waits behind the blocker.
        let watcher = Task { try await coalescer.run(key: "k", priority: PriorityHandle(.normal)) { _ in 0 } }
        await coalescer.joins.waitInTest { $0 >= 2 }
        firstGate.open()
        #expect(try await watcher.value == 1, "it joined the first flight")
        let firstEnding = await endings.next()
        #expect(firstEnding == "first finished")
        #expect(coalescer.inFlight == 0)
        let second = flight(secondGate, "second")
        await coalescer.joins.waitInTest { $0 >= 3 }
        second.cancel()
        _ = await second.result
        #expect(scheduler.counts[.orphanedFlight]?.queued == 2, "each flight has its job")
        secondGate.open()
        let secondEnding = await endings.next()
        #expect(secondEnding == "second finished")
        blocker.release()
        await untilCancelled { await scheduler.waitUntilIdle(.orphanedFlight) }
        #expect(scheduler.counts[.orphanedFlight]?.finished == 2)
        await scheduler.close()
    }

    /// The same at the pipeline: a thumbnail whose first requester left at
    /// its deadline, adopted while the background slots are busy, joined by
    /// a second requester who leaves too. Once the slots free up, the
    /// thumbnail is stored and the next request is a hit; the origin was
    /// asked once.
    @Test func aThumbnailLeftByTwoRequestersIsStoredBehindThem() async throws {
        let h = try await LoopbackHarness { $0.download.retries = 0; $0.background.concurrency = 1 }
        h.origin.register("late.jpg", .init(body: try Fixtures.image(width: 300, height: 200, suffix: ".jpg"),
                                            contentType: "image/jpeg"))
        let blocker = BackgroundSchedulerTests.Gate()
        h.pipeline.background.submit(BackgroundJobKey(.reclaim, key: "test-blocker"), priority: .veryHigh) {
            await blocker.wait()
        }
        await untilCancelled { await h.pipeline.background.waitForLoad { $0.running == 1 } }
        let request = ImageRequest(url: h.url("/gate/late.jpg"), width: 100, height: 100)
        func requester() -> Task<ImageResponse, Error> {
            Task { try await Orphans.$finish.withValue(true) { try await h.pipeline.image(request) } }
        }
        let first = requester()
        await h.origin.waitForRequest("/gate/late.jpg")  // the flight is at the origin, held there
        first.cancel()
        _ = await first.result
        #expect(h.pipeline.background.counts[.orphanedFlight]?.queued == 1, "adopted, queued behind the blocker")
        let joinedBefore = h.pipeline.variants.joins.withLock { $0 }
        let second = requester()
        await h.pipeline.variants.joins.waitInTest { $0 > joinedBefore }  // joined the adopted flight
        second.cancel()
        _ = await second.result
        h.origin.openGate()
        blocker.release()
        await untilCancelled { await h.pipeline.background.waitUntilIdle(.orphanedFlight) }
        await h.store.waitForWritesBehind()
        #expect(try await h.pipeline.stats().variants == 1, "the thumbnail was finished and stored behind both requesters")
        let third = try await h.pipeline.image(request)
        #expect(third.source == .memory || third.source == .disk, "\(third.source)")
        #expect(h.origin.requestCount("/gate/late.jpg") == 1, "asked once")
        try await h.pipeline.close()
        h.origin.stop()
    }
}
