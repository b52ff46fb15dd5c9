@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// Review findings: offline is a state, not one timeout (and one backoff)
/// per URL; the waiting line per host and the blocking pool are bounded.
@Suite("Offline hosts and bounded queues", .timeLimit(.minutes(3)))
struct OfflineTests {
    /// A loopback port bound but never listening: every connect is refused
    /// at once, and no other test's server can take the port meanwhile.
    typealias RefusingPort = HeldPort

    /// 40 URLs to an unreachable host: after `offline_after` connect
    /// failures the host is offline; the rest are not tried (no retries, no
    /// backoff), all 40 are kept for `prefetch --retry`, and the summary says
    /// which were refused as offline.
    @Test func fortyURLsToAnUnreachableHostGoStraightToTheRetryQueue() async throws {
        let refusing = try RefusingPort()
        let port = refusing.port
        let dir = TempDir()
        let pipeline = try await Fixtures.pipeline(dir.path) {
            // Without the breaker each URL would wait 1 + 2 + 4 s of backoff.
            $0.download.retries = 3
            $0.download.retryBaseDelay = 1
            $0.download.retryMaxDelay = 4
            $0.download.offlineAfter = 3
        }
        let urls = (0..<40).map { "http://127.0.0.1:\(port)/art/\($0).jpg" }
        let (summary, _) = await pipeline.prefetch(urls, variants: [])
        #expect(summary.failed == 40)
        #expect(summary.failures["connect", default: 0] + summary.failures["host_offline", default: 0] == 40)
        #expect(summary.failures["host_offline", default: 0] >= 40 - 8 - 3, "\(summary.failures)")
        #expect(summary.failures.keys.allSatisfy { ["connect", "host_offline"].contains($0) })
        #expect(try await pipeline.retryQueue().count == 40)
        try await pipeline.close()
        withExtendedLifetime(refusing) {}
    }

    @Test func theBreakerOpensAfterRepeatedNetworkFailuresAndAnAnswerClosesIt() {
        let breaker = HostBreaker(threshold: 2, coolDown: 60)
        let connect = DownloadError(.connect, "refused")
        let now = Date()
        breaker.record(connect, host: "a.test", now: now)
        #expect(!breaker.refuses("a.test", now: now))
        // An answer, even a 500, is the host there: the row starts again.
        breaker.record(DownloadError(.httpStatus, "500", status: 500), host: "a.test", now: now)
        breaker.record(connect, host: "a.test", now: now)
        #expect(!breaker.refuses("a.test", now: now), "one failure in a row")
        breaker.record(connect, host: "a.test", now: now)
        #expect(breaker.refuses("a.test", now: now.addingTimeInterval(1)))
        #expect(!breaker.refuses("b.test", now: now), "per host")
        // After the cool-down one attempt goes through; the others still wait.
        #expect(!breaker.refuses("a.test", now: now.addingTimeInterval(61)))
        #expect(breaker.refuses("a.test", now: now.addingTimeInterval(62)))
        breaker.recordAnswer(host: "a.test")
        #expect(!breaker.refuses("a.test", now: now.addingTimeInterval(63)))
        #expect(breaker.offlineHosts.isEmpty)
    }

    /// A host that answers again (the probe after the cool-down) is online.
    @Test func aLaterSuccessClosesTheBreaker() async throws {
        let h = try await DownloaderTests.Harness { $0.retries = 0; $0.offlineAfter = 1 }
        let authority = try NormalizedURL(h.origin.url("/img/a.jpg")).authority
        h.pipeline.downloader.breaker.record(DownloadError(.connect, "refused"), host: authority)
        #expect(await h.failure("/img/a.jpg")?.code == .hostOffline)
        #expect(h.origin.requestCount("/img/a.jpg") == 0, "not tried while offline")

        // With no cool-down, every URL is a probe: the first answer closes the breaker.
        let probing = try await DownloaderTests.Harness { $0.retries = 0; $0.offlineAfter = 1; $0.offlineRetryAfter = 0 }
        let host = try NormalizedURL(probing.origin.url("/img/a.jpg")).authority
        probing.pipeline.downloader.breaker.record(DownloadError(.connect, "refused"), host: host)
        #expect(probing.pipeline.downloader.breaker.offlineHosts.keys.contains(host))
        #expect(try await probing.pipeline.original(probing.origin.url("/img/a.jpg")).source == .downloaded)
        #expect(probing.pipeline.downloader.breaker.offlineHosts.isEmpty)
    }

    /// Past `queue_per_host` waiting transfers for one host, more fail at once.
    @Test func theWaitingLineOfAHostIsBounded() async throws {
        let h = try await DownloaderTests.Harness { $0.perHost = 1; $0.queuePerHost = 2; $0.retries = 0 }
        let downloader = h.pipeline.downloader
        let gated = (0..<3).map { h.origin.url("/gate/a.jpg?\($0)") }
        let first = Task { try await downloader.fetch(gated[0]) }
        await h.origin.waitForRequest("/gate/a.jpg")
        let waiting = gated.dropFirst().map { url in Task { try await downloader.fetch(url) } }
        await downloader.waitForActivity { $0.queued >= 2 }
        let refused = await #expect(throws: DownloadError.self) { _ = try await downloader.fetch(h.origin.url("/img/a.jpg")) }
        #expect(refused?.code == .queueFull)
        #expect(refused?.isNetworkFailure == true, "kept for the retry queue")
        h.origin.openGate()
        #expect(try await first.value.status == 200)
        for task in waiting { #expect(try await task.value.status == 200) }
    }

    /// The blocking-I/O pool has a fixed number of threads: a burst of
    /// blocking jobs waits for them instead of growing threads. The jobs hold
    /// their thread until a gate opens, which happens only once every thread
    /// is taken and the rest of the burst is waiting (or, were the pool to
    /// grow, once the whole burst is running). The pool is the process's:
    /// another test may hold one of its threads until a job of its own, queued
    /// behind this burst, has run (ReclaimTests does), so the gate does not
    /// wait for this burst alone to take every thread.
    @Test(.timeLimit(.minutes(3))) func theBlockingPoolIsBounded() async throws {
        let threads = Blocking.threadCount, burst = threads * 4
        let gate = DispatchSemaphore(value: 0)
        let running = Watched((started: 0, now: 0, most: 0))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<burst {
                group.addTask {
                    try await Blocking.run {
                        running.withLock { $0.started += 1; $0.now += 1; $0.most = max($0.most, $0.now) }
                        gate.wait()
                        running.withLock { $0.now -= 1 }
                    }
                }
            }
            // Every thread taken (by this burst or another test's job) while
            // at least the rest of the burst waits: the pool did not grow.
            await Blocking.waitForLoad { $0.running == threads && $0.waiting >= burst - threads }
            #expect(running.withLock { $0.most } <= threads, "no more jobs at once than threads")
            for _ in 0..<burst { gate.signal() }
            try await group.waitForAll()
        }
        #expect(running.withLock { $0.most } <= threads)
        #expect(running.withLock { $0.started } == burst)
    }
}
