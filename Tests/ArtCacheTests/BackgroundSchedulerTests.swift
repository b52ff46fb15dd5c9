import Foundation
import Testing
@testable import ArtCacheCore

/// The one owner of work behind answers (issue 34): deduplicated, bounded
/// (per kind and by bytes, oldest-lowest dropped and counted), ordered by
/// priority, a fixed number running, and stopped by `close()`.
@Suite("Background scheduler", .timeLimit(.minutes(3)))
struct BackgroundSchedulerTests {
    /// A gate jobs wait on, opened by the test (no sleeps).
    final class Gate: Sendable {
        private let open = Watched(false)
        func wait() async { await open.wait { $0 } }
        func release() { open.withLock { $0 = true } }
    }

    /// What ran, in order.
    final class Log: Sendable {
        private let entries = Locked<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    static func settings(maxQueued: Int = 10_000, maxBytes: Int64 = 64 << 20, concurrency: Int = 1) -> BackgroundSettings {
        var settings = BackgroundSettings()
        settings.maxQueued = maxQueued
        settings.maxBytes = maxBytes
        settings.concurrency = concurrency
        return settings
    }

    /// Suspends until the calling task is cancelled (an event, not a clock).
    static func untilCancelled() async {
        let gate = Gate()
        await withTaskCancellationHandler { await gate.wait() } onCancel: { gate.release() }
    }

    /// Occupies the scheduler's only slot until the gate opens.
    static func block(_ scheduler: BackgroundScheduler, _ gate: Gate) async {
        scheduler.submit(BackgroundJobKey(.reclaim, key: "blocker"), priority: .veryHigh) { await gate.wait() }
        await scheduler.waitForLoad { $0.running == 1 }
    }

    @Test func aKeyWaitingOrRunningIsNotQueuedAgain() async {
        let scheduler = BackgroundScheduler(settings: Self.settings())
        let gate = Gate()
        let runs = Locked(0)
        let key = BackgroundJobKey(.revalidation, key: "abc")
        #expect(scheduler.submit(key) { runs.withLock { $0 += 1 }; await gate.wait() } == .queued)
        for _ in 0..<49 {
            #expect(scheduler.submit(key) { runs.withLock { $0 += 1 } } == .duplicate)
        }
        // Another spec of the same key is another job.
        #expect(scheduler.submit(BackgroundJobKey(.revalidation, key: "abc", spec: "2")) {} == .queued)
        gate.release()
        await scheduler.waitUntilIdle()
        #expect(runs.withLock { $0 } == 1)
        // Once it has ended, the key may run again.
        #expect(scheduler.submit(key) { runs.withLock { $0 += 1 } } == .queued)
        await scheduler.waitUntilIdle()
        #expect(runs.withLock { $0 } == 2)
        #expect(scheduler.counts[.revalidation]?.finished == 3)
        await scheduler.close()
    }

    @Test func pastMaxQueuedTheOldestOfTheLowestPriorityIsDroppedAndCounted() async {
        let scheduler = BackgroundScheduler(settings: Self.settings(maxQueued: 3), kinds: [.placeholder, .warmUp, .reclaim])
        let gate = Gate()
        await Self.block(scheduler, gate)
        let log = Log()
        let dropped = Log()
        func submit(_ name: String, _ priority: ImagePriority) -> BackgroundSubmission {
            scheduler.submit(BackgroundJobKey(.warmUp, key: name), priority: priority, onDrop: { dropped.add(name) }) {
                log.add(name)
            }
        }
        #expect(submit("low-1", .low) == .queued)
        #expect(submit("high-1", .high) == .queued)
        #expect(submit("low-2", .low) == .queued)
        // A fourth: the oldest of the lowest priority (low-1) goes.
        #expect(submit("normal-1", .normal) == .queued)
        #expect(dropped.all == ["low-1"])
        // A fifth, of a priority lower than all: it is the one dropped.
        #expect(submit("veryLow-1", .veryLow) == .dropped, "the newcomer is the only job of the lowest priority")
        #expect(dropped.all == ["low-1"], "onDrop is not called for a submit that returns .dropped")
        // Other kinds have bounds of their own.
        #expect(scheduler.submit(BackgroundJobKey(.placeholder, key: "p")) { log.add("p") } == .queued)
        let counts = scheduler.counts
        #expect(counts[.warmUp]?.queued == 3)
        #expect(counts[.warmUp]?.dropped == 2)
        #expect(counts[.placeholder]?.queued == 1)
        gate.release()
        await scheduler.waitUntilIdle()
        // Kinds take turns in the order they were declared (after the
        // blocker's kind, reclaim, the first: placeholder, then warm_up);
        // within a kind the highest priority first, then oldest.
        #expect(log.all == ["p", "high-1", "normal-1", "low-2"])
        await scheduler.close()
    }

    /// A flood of one kind does not starve another: a reclaim queued behind
    /// 100 warm-ups (of a higher priority) starts within the next turn.
    /// The scheduler knows no kind in advance: a client declares its own
    /// (name, limits), listed from the start at 0; a kind first seen in a
    /// submission is declared then; the declared limit holds.
    @Test func kindsAreDeclaredByTheirClients() async {
        let serial = BackgroundKind("test_serial", maxRunning: 1)
        let other = BackgroundKind("test_other")
        let scheduler = BackgroundScheduler(settings: Self.settings(concurrency: 4), kinds: [serial])
        #expect(scheduler.kinds == [serial])
        #expect(scheduler.counts == [serial: BackgroundCounts()], "a declared kind is counted before its first job")
        let gate = Gate()
        for name in ["a", "b"] {
            scheduler.submit(BackgroundJobKey(serial, key: name)) { await gate.wait() }
        }
        scheduler.submit(BackgroundJobKey(other, key: "c")) { await gate.wait() }
        await scheduler.waitForLoad { $0.running == 2 }
        #expect(scheduler.kinds.map(\.name) == ["test_serial", "test_other"])
        #expect(scheduler.counts[serial]?.running == 1, "maxRunning 1: the second waits though concurrency is 4")
        #expect(scheduler.counts[serial]?.queued == 1)
        #expect(scheduler.counts[other]?.running == 1)
        // One name is one kind: a job key made with an equal kind is the same job.
        #expect(scheduler.submit(BackgroundJobKey(BackgroundKind("test_serial", maxRunning: 1), key: "a")) {} == .duplicate)
        gate.release()
        await scheduler.waitUntilIdle()
        #expect(scheduler.counts[serial]?.finished == 2)
        await scheduler.close()
    }

    @Test func kindsTakeTurns() async {
        let scheduler = BackgroundScheduler(settings: Self.settings())
        let gate = Gate()
        await Self.block(scheduler, gate)
        let log = Log()
        for index in 0..<100 {
            scheduler.submit(BackgroundJobKey(.warmUp, key: "w\(index)"), priority: .high) { log.add("warm_up") }
        }
        scheduler.submit(BackgroundJobKey(.reclaim, key: "/cache"), priority: .veryLow) { log.add("reclaim") }
        scheduler.submit(BackgroundJobKey(.placeholder, key: "p"), priority: .veryLow) { log.add("placeholder") }
        gate.release()
        await scheduler.waitUntilIdle()
        let order = log.all
        #expect(order.count == 102)
        #expect(Array(order.prefix(3)).sorted() == ["placeholder", "reclaim", "warm_up"], "\(order.prefix(5))")
        await scheduler.close()
    }

    @Test func waitingJobsHoldAtMostMaxBytes() async {
        let scheduler = BackgroundScheduler(settings: Self.settings(maxBytes: 1000))
        let gate = Gate()
        await Self.block(scheduler, gate)
        for index in 0..<10 {
            scheduler.submit(BackgroundJobKey(.revalidation, key: "r\(index)"), priority: .low, bytes: 300) {}
        }
        #expect(scheduler.queuedBytes <= 1000)
        #expect(scheduler.queuedBytes == 900)
        #expect(scheduler.counts[.revalidation]?.queued == 3)
        #expect(scheduler.counts[.revalidation]?.dropped == 7)
        // Jobs that hold bytes leave the count when they start.
        gate.release()
        await scheduler.waitUntilIdle()
        #expect(scheduler.queuedBytes == 0)
        await scheduler.close()
    }

    @Test func atMostConcurrencyJobsRun() async {
        let scheduler = BackgroundScheduler(settings: Self.settings(concurrency: 3))
        let gate = Gate()
        let peak = Watched((now: 0, max: 0))
        for index in 0..<20 {
            scheduler.submit(BackgroundJobKey(.warmUp, key: "w\(index)")) {
                peak.withLock { $0.now += 1; $0.max = max($0.max, $0.now) }
                await gate.wait()
                peak.withLock { $0.now -= 1 }
            }
        }
        await peak.wait { $0.now == 3 }
        #expect(scheduler.counts[.warmUp]?.running == 3)
        #expect(scheduler.counts[.warmUp]?.queued == 17)
        gate.release()
        await scheduler.waitUntilIdle()
        #expect(peak.withLock { $0.max } == 3)
        await scheduler.close()
    }

    /// close(): what waits is dropped (onDrop), what runs is cancelled and
    /// awaited; later submits are refused.
    @Test func formatUpgradesRunOneAtATimeAndLeaveSlotsToTheOtherKinds() async {
        let scheduler = BackgroundScheduler(settings: Self.settings(concurrency: 4))
        let gate = Gate()
        for i in 0..<3 {
            scheduler.submit(BackgroundJobKey(.formatUpgrade, key: "u\(i)")) { await gate.wait() }
        }
        await scheduler.waitForLoad { $0.running == 1 }
        #expect(scheduler.counts[.formatUpgrade]?.queued == 2 && scheduler.counts[.formatUpgrade]?.running == 1)
        // The other slots are the other kinds'.
        for i in 0..<3 {
            scheduler.submit(BackgroundJobKey(.revalidation, key: "r\(i)")) { await gate.wait() }
        }
        await scheduler.waitForLoad { $0.running == 4 }
        #expect(scheduler.counts[.revalidation]?.running == 3 && scheduler.counts[.formatUpgrade]?.running == 1)
        gate.release()
        await scheduler.waitUntilIdle()
        #expect(scheduler.counts[.formatUpgrade]?.finished == 3 && scheduler.counts[.revalidation]?.finished == 3)
    }

    @Test func formatUpgradesWaitUntilNoForegroundRequestIsLeft() async {
        let scheduler = BackgroundScheduler(settings: Self.settings(concurrency: 4))
        scheduler.foregroundBegan()
        scheduler.foregroundBegan()
        let ran = Locked(0)
        scheduler.submit(BackgroundJobKey(.formatUpgrade, key: "u")) { ran.withLock { $0 += 1 } }
        // Other kinds are not held back.
        scheduler.submit(BackgroundJobKey(.revalidation, key: "r")) {}
        await scheduler.waitUntilIdle(.revalidation)
        #expect(scheduler.counts[.formatUpgrade]?.queued == 1 && scheduler.counts[.formatUpgrade]?.running == 0)
        scheduler.foregroundEnded()
        #expect(scheduler.counts[.formatUpgrade]?.queued == 1, "one request is still in flight")
        let clock = ContinuousClock()
        let quiet = clock.now
        scheduler.foregroundEnded()
        await scheduler.waitUntilIdle(.formatUpgrade)
        #expect(ran.withLock { $0 } == 1 && scheduler.foregroundCount == 0)
        #expect(clock.now - quiet >= scheduler.settings.quietAfter, "started once the quiet had lasted")
        // Submitted while quiet: starts at once.
        scheduler.submit(BackgroundJobKey(.formatUpgrade, key: "v")) { ran.withLock { $0 += 1 } }
        await scheduler.waitUntilIdle(.formatUpgrade)
        #expect(ran.withLock { $0 } == 2)
    }

    /// A burst has instants with no request in flight: an upgrade starts
    /// only once none has run for `quietAfter`; a request beginning and
    /// ending meanwhile starts the wait again. `close()` stops the timer.
    @Test func formatUpgradesWaitForTheQuietToLast() async {
        var settings = Self.settings(concurrency: 4)
        settings.quietAfter = .seconds(3600)
        let scheduler = BackgroundScheduler(settings: settings)
        let dropped = Locked(0)
        scheduler.foregroundBegan()
        scheduler.submit(BackgroundJobKey(.formatUpgrade, key: "u"), onDrop: { dropped.withLock { $0 += 1 } }) {}
        scheduler.foregroundEnded()
        scheduler.foregroundBegan()
        scheduler.foregroundEnded()
        // Quiet, but not for an hour: it waits (other kinds do not).
        scheduler.submit(BackgroundJobKey(.revalidation, key: "r")) {}
        await scheduler.waitUntilIdle(.revalidation)
        #expect(scheduler.counts[.formatUpgrade]?.queued == 1 && scheduler.counts[.formatUpgrade]?.running == 0)
        await scheduler.close()
        #expect(dropped.withLock { $0 } == 1 && scheduler.counts[.formatUpgrade]?.finished == 0)

        // A short quiet: the job starts after it, not before.
        settings.quietAfter = .milliseconds(200)
        let short = BackgroundScheduler(settings: settings)
        let clock = ContinuousClock()
        short.foregroundBegan()
        short.submit(BackgroundJobKey(.formatUpgrade, key: "v")) {}
        let ended = clock.now
        short.foregroundEnded()
        await short.waitUntilIdle(.formatUpgrade)
        #expect(clock.now - ended >= .milliseconds(200) && short.counts[.formatUpgrade]?.finished == 1)
        await short.close()
    }

    @Test func closeDropsWhatWaitsAndCancelsWhatRuns() async {
        let scheduler = BackgroundScheduler(settings: Self.settings(concurrency: 2))
        let sawCancellation = Locked(0)
        for index in 0..<3000 {
            scheduler.submit(BackgroundJobKey(.warmUp, key: "w\(index)")) {
                // Runs until cancelled (a download that never ends).
                await Self.untilCancelled()
                if Task.isCancelled { sawCancellation.withLock { $0 += 1 } }
            }
        }
        await scheduler.waitForLoad { $0.running == 2 }
        let dropped = Locked(0)
        scheduler.submit(BackgroundJobKey(.placeholder, key: "p"), onDrop: { dropped.withLock { $0 += 1 } }) {}
        await scheduler.close()
        #expect(scheduler.counts[.warmUp]?.running == 0)
        #expect(scheduler.counts[.warmUp]?.queued == 0)
        #expect(dropped.withLock { $0 } == 1)
        #expect(sawCancellation.withLock { $0 } == 2, "both running jobs saw their cancellation")
        #expect(scheduler.submit(BackgroundJobKey(.warmUp, key: "late")) {} == .closed)
    }

    @Test func cancelTakesOutOnlyTheMatchingJobs() async {
        let scheduler = BackgroundScheduler(settings: Self.settings(concurrency: 1))
        let gate = Gate()
        let log = Log()
        scheduler.submit(BackgroundJobKey(.touchLogFold, key: "/a")) {
            await withTaskCancellationHandler { await gate.wait() } onCancel: { gate.release() }
            log.add("fold /a ended")
        }
        await scheduler.waitForLoad { $0.running == 1 }
        scheduler.submit(BackgroundJobKey(.reclaim, key: "/a")) { log.add("reclaim /a") }
        scheduler.submit(BackgroundJobKey(.reclaim, key: "/b")) { log.add("reclaim /b") }
        await scheduler.cancel { $0.key == "/a" }
        #expect(log.all.first == "fold /a ended")
        await scheduler.waitUntilIdle()
        #expect(log.all == ["fold /a ended", "reclaim /b"])
        await scheduler.close()
    }
}
