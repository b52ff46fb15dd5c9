import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheServer

/// `[service] max_inflight` and `queue` hold exactly, whatever the burst.
@Suite("Service admission", .timeLimit(.minutes(3)))  // 3: under TSan the whole suite shares 2 cores
struct AdmissionTests {
    enum Decision: Sendable { case running, queued, refused }

    /// 200 requests at once against 4 slots and a queue of 10: exactly 14
    /// are admitted (4 run, 10 wait), every other one is refused at once.
    /// The queue's bound used to be checked in one critical section and the
    /// waiter appended in another, so a burst overshot it.
    @Test func aBurstAdmitsExactlyInflightPlusQueue() async throws {
        for round in 0..<8 {
            let (decisions, decided) = AsyncStream.makeStream(of: Decision.self)
            // Every queued request lets the others run before it waits.
            let admission = Admission(maxInflight: 4, queue: 10, onQueued: { decided.yield(.queued) },
                                      seams: .init(afterDecision: { await Task.yield() }))
            let gate = Gate()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        do {
                            try await admission.run {
                                if !gate.isOpen { decided.yield(.running) }
                                await gate.wait()
                            }
                        } catch {
                            decided.yield(.refused)
                        }
                    }
                }
                // Each request runs, waits in the queue or is refused: once
                // all 200 have, count them.
                var counts: [Decision: Int] = [:]
                for await decision in decisions {
                    counts[decision, default: 0] += 1
                    if counts.values.reduce(0, +) == 200 { break }
                }
                #expect(counts == [.running: 4, .queued: 10, .refused: 186], "round \(round)")
                #expect(admission.load == (4, 10), "round \(round)")
                gate.open()
            }
            #expect(admission.load == (0, 0), "round \(round): every slot released")
        }
    }

    /// A burst of low and high requests against busy slots and a queue too
    /// small for all: whatever the interleaving, every high request gets a
    /// place and runs, and every low one is refused (at once, or shed from
    /// the queue when a high one arrives). 4 high requests fit a queue of 4,
    /// so a high one always finds room or a low one to shed.
    @Test func aBurstOfBothClassesShedsLowAndAdmitsEveryHigh() async throws {
        for round in 0..<8 {
            enum Event: Sendable, Hashable { case ran(ImagePriority), refused(ImagePriority) }
            let (events, event) = AsyncStream.makeStream(of: Event.self)
            let shed = Locked<[ImagePriority]>([])
            let admission = Admission(maxInflight: 2, queue: 4, onShed: { p in shed.withLock { $0.append(p) } }, seams: .init(afterDecision: { await Task.yield() }))
            let gate = Gate()
            // Both slots busy until the gate opens.
            let holders = (0..<2).map { _ in Task { try await admission.run { await gate.wait() } } }
            while admission.load.inflight < 2 { await Task.yield() }
            let burst: [ImagePriority] = [.low, .high, .low, .low, .high, .low, .low, .high, .low, .high, .low, .low]
            await withTaskGroup(of: Void.self) { group in
                for priority in burst {
                    group.addTask {
                        do {
                            try await admission.run(priority: priority) { event.yield(.ran(priority)) }
                        } catch Admission.Refusal.overloaded {
                            event.yield(.refused(priority))
                        } catch {
                            Issue.record("round \(round): \(error)")
                        }
                    }
                }
                // 12 requests, 4 places: 8 refusals, whoever they are.
                var refused: [ImagePriority] = []
                var iterator = events.makeAsyncIterator()
                while refused.count < 8, let next = await iterator.next() {
                    if case .refused(let p) = next { refused.append(p) } else { Issue.record("round \(round): ran before the gate opened") }
                }
                #expect(refused == Array(repeating: .low, count: 8), "round \(round): only low requests are refused")
                #expect(admission.load == (2, 4), "round \(round)")
                gate.open()
                var ran: [ImagePriority] = []
                while ran.count < 4, let next = await iterator.next() {
                    if case .ran(let p) = next { ran.append(p) }
                }
                #expect(ran == Array(repeating: .high, count: 4), "round \(round): every high request runs")
            }
            for holder in holders { try await holder.value }
            #expect(shed.withLock { $0 }.sorted() == Array(repeating: .low, count: 8), "round \(round): counted by class")
            #expect(admission.load == (0, 0), "round \(round): every slot released")
        }
    }

    /// Queued requests get a freed slot in class order, first come first
    /// served within a class; when the queue is full a higher arrival sheds
    /// the newest of the lowest class below it, and an arrival with nothing
    /// lower to shed is refused at once.
    @Test func placesGoByClassAndShedTheNewestLowest() async throws {
        enum Event: Sendable, Equatable { case queued, ran(String), refused(String) }
        let (events, event) = AsyncStream.makeStream(of: Event.self)
        let admission = Admission(maxInflight: 1, queue: 3, onQueued: { event.yield(.queued) })
        let gate = Gate()
        let holder = Task { try await admission.run { await gate.wait() } }
        while admission.load.inflight < 1 { await Task.yield() }
        var iterator = events.makeAsyncIterator()
        var tasks: [Task<Void, Never>] = []
        /// Sends `name` at `priority` and waits for the `expected` events it causes (in any order).
        func send(_ name: String, _ priority: ImagePriority, expecting expected: [Event]) async {
            tasks.append(Task {
                do {
                    try await admission.run(priority: priority) { event.yield(.ran(name)) }
                } catch {
                    event.yield(.refused(name))
                }
            })
            var seen: [Event] = []
            while seen.count < expected.count, let next = await iterator.next() { seen.append(next) }
            #expect(seen.count == expected.count && expected.allSatisfy(seen.contains), "\(name): \(seen)")
        }
        await send("low1", .low, expecting: [.queued])
        await send("normal1", .normal, expecting: [.queued])
        await send("low2", .low, expecting: [.queued])
        await send("high1", .high, expecting: [.queued, .refused("low2")])  // the newest low
        await send("low3", .low, expecting: [.refused("low3")])  // nothing lower: refused at once
        await send("normal2", .normal, expecting: [.queued, .refused("low1")])
        await send("high2", .high, expecting: [.queued, .refused("normal2")])  // no low left: the newest normal
        await send("normal3", .normal, expecting: [.refused("normal3")])
        #expect(admission.load == (1, 3))
        gate.open()
        var ran: [String] = []
        while ran.count < 3, let next = await iterator.next() {
            if case .ran(let name) = next { ran.append(name) }
        }
        #expect(ran == ["high1", "high2", "normal1"])
        try await holder.value
        for task in tasks { await task.value }
        #expect(admission.load == (0, 0))
    }

    /// A request cancelled while queued leaves its place (the next class
    /// order still holds) and is told so.
    @Test func aCancelledPlaceIsGivenUp() async throws {
        let (queued, wait) = AsyncStream.makeStream(of: Void.self)
        let admission = Admission(maxInflight: 1, queue: 2, onQueued: { wait.yield() })
        let gate = Gate()
        let holder = Task { try await admission.run { await gate.wait() } }
        while admission.load.inflight < 1 { await Task.yield() }
        var waits = queued.makeAsyncIterator()
        let cancelled = Task { try await admission.run(priority: .high) { "ran" } }
        _ = await waits.next()
        let low = Task { try await admission.run(priority: .low) { "low ran" } }
        _ = await waits.next()
        cancelled.cancel()
        await #expect(throws: Admission.Refusal.cancelled) { try await cancelled.value }
        #expect(admission.load == (1, 1))
        gate.open()
        #expect(try await low.value == "low ran")
        try await holder.value
        #expect(admission.load == (0, 0))
    }
}

/// Holds async callers until opened.
final class Gate: Sendable {
    private let state = Locked((open: false, waiters: [CheckedContinuation<Void, Never>]()))

    var isOpen: Bool { state.withLock { $0.open } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { s -> Bool in
                if s.open { return true }
                s.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
