import Foundation
import Testing
@_spi(Benchmarks) @testable import ArtCacheCore
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
                                      afterDecision: { await Task.yield() })
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
