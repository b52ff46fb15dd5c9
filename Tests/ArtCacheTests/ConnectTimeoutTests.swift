@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
import Foundation
import Testing

/// Review finding: a connect timeout came back as a `timeout` like any
/// other, which the host breaker does not count, so a black-holed host never
/// went offline (each of its URLs cost `connect_timeout` on every retry). And
/// the breaker's host map only ever grew.
@Suite("Connect timeouts and the host breaker", .timeLimit(.minutes(3)))
struct ConnectTimeoutTests {
    /// A loopback port that never accepts. With `full`, a connect to it never
    /// completes, like one to a black-holed host, without a packet leaving
    /// loopback: the listening socket has a backlog of 0 and its one
    /// accept-queue slot is taken by a connection that is never accepted, so
    /// the kernel drops the SYNs of further connects until the client's own
    /// timeout. Without, connects complete (the kernel accepts them into the
    /// queue) and requests are never answered. The sockets are held as long
    /// as this object lives: the port cannot be taken by anyone else.
    final class UnacceptingPort {
        let listener: Int32
        let filler: Int32
        let port: Int

        init(full: Bool) throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let filler = full ? socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) : -1
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            var ready = listener >= 0 && withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, length) == 0 && listen(listener, full ? 0 : 16) == 0 && getsockname(listener, $0, &length) == 0
                }
            }
            if full, ready {
                // The filler connects without blocking; once the listener
                // polls readable, it sits in the accept queue: the queue is full.
                _ = fcntl(filler, F_SETFL, fcntl(filler, F_GETFL) | O_NONBLOCK)
                ready = filler >= 0 && withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 || errno == EINPROGRESS
                    }
                }
                var queued = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                ready = ready && poll(&queued, 1, 10_000) == 1
            }
            guard ready else {
                if listener >= 0 { close(listener) }
                if filler >= 0 { close(filler) }
                throw POSIXError(.EADDRNOTAVAIL)
            }
            self.listener = listener
            self.filler = filler
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit {
            if filler >= 0 { close(filler) }
            close(listener)
        }
    }

    /// The black-holed host is offline after `offline_after` connect
    /// timeouts: the URL fails as `host_offline` without running its other
    /// retries, and the host's breaker is open.
    @Test func aBlackHoledHostGoesOffline() async throws {
        let hole = try UnacceptingPort(full: true)
        let h = try await DownloaderTests.Harness {
            $0.connectTimeout = 0.3
            $0.retries = 5
            $0.offlineAfter = 2
        }
        let downloader = h.pipeline.downloader
        let error = await #expect(throws: DownloadError.self) {
            _ = try await downloader.fetch("http://127.0.0.1:\(hole.port)/img/a.jpg")
        }
        #expect(error?.code == .hostOffline, "\(String(describing: error))")
        #expect(downloader.breaker.offlineHosts.keys.contains("127.0.0.1:\(hole.port)"))
        withExtendedLifetime(hole) {}
    }

    /// A transfer whose connection never came up reports `timeout` (it is
    /// `connect_timeout` that ran out) marked as before connecting, which is
    /// what the breaker counts: on the first hop, and on a redirect hop
    /// (whose earlier hop did connect).
    @Test func aConnectTimeoutIsMarkedAsBeforeConnecting() async throws {
        let hole = try UnacceptingPort(full: true)
        let h = try await DownloaderTests.Harness { $0.connectTimeout = 2; $0.retries = 0; $0.offlineAfter = 100 }
        let downloader = h.pipeline.downloader
        let direct = await #expect(throws: DownloadError.self) {
            _ = try await downloader.fetch("http://127.0.0.1:\(hole.port)/img/a.jpg")
        }
        #expect(direct?.code == .timeout && direct?.timedOutConnecting == true, "\(String(describing: direct))")
        #expect(direct?.hostUnreachable == true && direct?.isNetworkFailure == true)
        #expect(direct?.message.contains("timed out connecting") == true)
        let hop = await #expect(throws: DownloadError.self) {
            _ = try await downloader.fetch(h.origin.url("/elsewhere/127.0.0.1:\(hole.port)/a.jpg"))
        }
        #expect(hop?.code == .timeout && hop?.timedOutConnecting == true, "\(String(describing: hop))")
        #expect(h.origin.requestCount("/elsewhere/127.0.0.1:\(hole.port)/a.jpg") == 1)
        withExtendedLifetime(hole) {}
    }

    /// A transfer that connected and then timed out stays `timeout`, and does
    /// not count toward offline: the host is there, only slow. Also on a
    /// redirect hop, and on a connection the server never accepts (the
    /// request sits in the kernel's queue).
    @Test func aTimeoutAfterConnectingDoesNotCountTowardOffline() async throws {
        let h = try await DownloaderTests.Harness { $0.timeout = 3; $0.retries = 0; $0.offlineAfter = 1 }
        let downloader = h.pipeline.downloader
        defer { h.origin.openGate() }
        let held = await #expect(throws: DownloadError.self) { _ = try await downloader.fetch(h.origin.url("/gate/a.jpg")) }
        #expect(held?.code == .timeout && held?.timedOutConnecting == false, "\(String(describing: held))")
        let hop = await #expect(throws: DownloadError.self) {
            _ = try await downloader.fetch(h.origin.url("/location/%2Fgate%2Fa.jpg"))
        }
        #expect(hop?.code == .timeout && hop?.timedOutConnecting == false, "\(String(describing: hop))")
        #expect(downloader.breaker.offlineHosts.isEmpty)

        // Accepted by the kernel (the accept queue has room), never by the server.
        let queued = try UnacceptingPort(full: false)
        let silent = await #expect(throws: DownloadError.self) {
            _ = try await downloader.fetch("http://127.0.0.1:\(queued.port)/img/a.jpg")
        }
        #expect(silent?.code == .timeout && silent?.timedOutConnecting == false, "\(String(describing: silent))")
        #expect(downloader.breaker.offlineHosts.isEmpty)
        withExtendedLifetime(queued) {}
    }

    /// A failure streak older than `forgetAfter` is forgotten (failures "in a
    /// row" are counted within that window), and a host with no recent
    /// failure and no open breaker leaves the map.
    @Test func theBreakerForgetsOldFailures() {
        let connect = DownloadError(.connect, "refused")
        let breaker = HostBreaker(threshold: 3, coolDown: 30, forgetAfter: 600, maxHosts: 1000)
        let t0 = Date()
        breaker.record(connect, host: "a.test", now: t0)
        breaker.record(connect, host: "a.test", now: t0.addingTimeInterval(1))
        breaker.record(connect, host: "a.test", now: t0.addingTimeInterval(1000))  // the streak was 16 minutes old
        #expect(!breaker.refuses("a.test", now: t0.addingTimeInterval(1001)))
        breaker.record(connect, host: "b.test", now: t0.addingTimeInterval(2000))
        #expect(breaker.trackedHosts == 1, "a.test failed last 1000 s ago: dropped")

        // An open breaker stays while it is open, and goes once it is stale.
        let opened = HostBreaker(threshold: 1, coolDown: 30, forgetAfter: 60, maxHosts: 1000)
        opened.record(connect, host: "down.test", now: t0)
        opened.record(connect, host: "other.test", now: t0.addingTimeInterval(20))
        #expect(opened.refuses("down.test", now: t0.addingTimeInterval(21)))
        #expect(opened.trackedHosts == 2)
        opened.record(connect, host: "third.test", now: t0.addingTimeInterval(200))
        #expect(opened.trackedHosts == 1)
        #expect(opened.offlineHosts.keys.sorted() == ["third.test"])
    }

    /// However many hosts fail, the map holds at most `maxHosts`: the
    /// entries that go first are the closed ones that failed longest ago;
    /// open breakers are kept.
    @Test func theBreakerMapIsBounded() {
        let connect = DownloadError(.connect, "refused")
        let breaker = HostBreaker(threshold: 2, coolDown: 3600, forgetAfter: 3600, maxHosts: 50)
        let t0 = Date()
        breaker.record(connect, host: "down.test", now: t0)
        breaker.record(connect, host: "down.test", now: t0)
        for index in 0..<1000 {
            breaker.record(connect, host: "h\(index).test", now: t0.addingTimeInterval(Double(index) / 100))
        }
        #expect(breaker.trackedHosts <= 50)
        #expect(breaker.refuses("down.test", now: t0.addingTimeInterval(11)), "the open breaker was kept")
        breaker.record(connect, host: "h999.test", now: t0.addingTimeInterval(11))
        #expect(breaker.refuses("h999.test", now: t0.addingTimeInterval(11)), "the latest host kept its streak")
    }
}
