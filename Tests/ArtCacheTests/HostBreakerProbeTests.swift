@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
import Foundation
import Testing

/// Issue 58, code-read item: a half-open probe records what it showed. On
/// a loopback origin whose host's breaker opened a cool-down ago (its
/// failures are dated back; the cool-down is 300 s, longer than the test
/// may run): a probe that connects and is then held past its deadline
/// shows the host is there, and a probe that is cancelled shows nothing —
/// either way the next request goes to the host, it is not refused for
/// another cool-down.
@Suite("Host breaker: what a probe shows", .timeLimit(.minutes(1)))
struct HostBreakerProbeTests {
    static let coolDown: TimeInterval = 300

    /// A harness whose origin's host is offline, its cool-down just over;
    /// `timeout`: a transfer's deadline.
    static func offlineHost(timeout: TimeInterval) async throws -> (DownloaderTests.Harness, String) {
        let h = try await DownloaderTests.Harness {
            $0.retries = 0
            $0.offlineAfter = 2
            $0.offlineRetryAfter = coolDown
            $0.timeout = timeout
        }
        let host = try NormalizedURL(h.origin.url("/img/a.jpg")).authority
        let opened = Date().addingTimeInterval(-coolDown - 1)
        for _ in 0..<2 { h.pipeline.downloader.breaker.record(DownloadError(.connect, "refused"), host: host, now: opened) }
        #expect(h.pipeline.downloader.breaker.offlineHosts[host] != nil, "offline")
        return (h, host)
    }

    @Test func aProbeThatTimesOutAfterConnectingLetsTheNextRequestThrough() async throws {
        let (h, host) = try await Self.offlineHost(timeout: 2)  // the held probe's deadline
        defer { h.origin.openGate() }
        let downloader = h.pipeline.downloader
        // The probe: the origin takes the request and holds it past the deadline.
        let probe = await #expect(throws: DownloadError.self) { _ = try await downloader.fetch(h.origin.url("/gate/a.jpg")) }
        #expect(probe?.code == .timeout && probe?.timedOutConnecting == false, "\(String(describing: probe))")
        #expect(h.origin.requestCount("/gate/a.jpg") == 1, "the probe reached the origin")
        let next = try await downloader.fetch(h.origin.url("/img/a.jpg"))
        #expect(next.status == 200)
        #expect(downloader.breaker.offlineHosts[host] == nil, "closed")
        try await h.pipeline.close()
    }

    @Test func aCancelledProbeDoesNotLeaveTheHostRefused() async throws {
        let (h, host) = try await Self.offlineHost(timeout: 50)  // not reached: the probe is cancelled first
        defer { h.origin.openGate() }
        let downloader = h.pipeline.downloader
        let probe = Task { try await downloader.fetch(h.origin.url("/gate/b.jpg")) }
        await h.origin.waitForRequest("/gate/b.jpg")  // the probe is under way
        probe.cancel()
        let cancelled = await #expect(throws: DownloadError.self) { _ = try await probe.value }
        #expect(cancelled?.code == .cancelled, "\(String(describing: cancelled))")
        // Its slot is free: the next request is the probe, at once.
        let next = try await downloader.fetch(h.origin.url("/img/a.jpg"))
        #expect(next.status == 200)
        #expect(downloader.breaker.offlineHosts[host] == nil, "its answer closed the breaker")
        try await h.pipeline.close()
    }
}
