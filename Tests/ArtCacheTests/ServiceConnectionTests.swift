@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheServer
import Foundation
import Hummingbird
import Testing

/// Connections with deadlines (issue 34): idle and read deadlines, bodies
/// refused on their headers, manifests admitted and cancelled like images.
/// Raw sockets against the real application on 127.0.0.1 port 0; the
/// blocking socket calls run on threads of their own (``onOwnThread(_:)``).
// Serialized, with the suite's limit of 3 minutes: under the whole suite on
// 2 cores, CPU-bound tests hold Swift's cooperative threads for tens of
// seconds (scripts/sanitizers/run says the same), and these tests' servers
// answer on them; the deadlines under test run on NIO's loops either way.
@Suite("Thumbnail service: connections", .serialized, .timeLimit(.minutes(3)))
struct ServiceConnectionTests {
    /// A harness with short deadlines, logging to `log`.
    static func harness(idle: TimeInterval, read: TimeInterval, log: LogCounter? = nil,
                        _ configure: @escaping (inout Configuration) -> Void = { _ in }) async throws -> ServiceHarness {
        try await ServiceHarness(live: true, log: log) {
            $0.service.idleTimeout = idle
            $0.service.requestReadTimeout = read
            configure(&$0)
        }
    }

    /// Why the service closed connections so far, in order: the reason
    /// `ConnectionGuard` logs when a deadline closes one (`idle_timeout`,
    /// `request_read_timeout`). The close follows the log line, so once a
    /// client has read end of file, its connection's reason is here.
    static func closeReasons(_ log: LogCounter) -> [String] { log.values("reason", of: "closing a connection") }

    // Deadlines are proven by events, not clock windows: end of file, and
    // the service saying which deadline closed the connection. The clock
    // bounds from below only, from before the moment the deadline counts from.
    @Test func anIdleConnectionIsClosedAfterIdleTimeout() async throws {
        let log = LogCounter()
        let s = try await Self.harness(idle: 1, read: 30, log: log)
        try await s.app().test(.live) { client in
            let port = client.port!
            // One that never sends a byte.
            let silent = try await onOwnThread {
                let start = ContinuousClock.now  // before the connection exists
                let connection = try RawConnection(port: port)
                let eof = try connection.readToEOF()
                return (eof, ContinuousClock.now - start)
            }
            #expect(silent.0)
            #expect(Self.closeReasons(log) == ["idle_timeout"])
            #expect(silent.1 >= .seconds(1), "\(silent.1)")
            // A keep-alive one, after an answer.
            let kept = try await onOwnThread {
                let connection = try RawConnection(port: port)
                let start = ContinuousClock.now  // before the answer the idle time counts from
                connection.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                let status = try connection.readResponse()?.status
                let eof = try connection.readToEOF()
                return (status, eof, ContinuousClock.now - start)
            }
            #expect(kept.0 == 200)
            #expect(kept.1)
            #expect(Self.closeReasons(log) == ["idle_timeout", "idle_timeout"])
            #expect(kept.2 >= .seconds(1), "\(kept.2)")
        }
        try await s.close()
    }

    @Test func slowHeadersAndTrickledBodiesAreCutAtTheReadDeadline() async throws {
        // The idle deadline is far away: only the read deadline can close them.
        let log = LogCounter()
        let s = try await Self.harness(idle: 30, read: 1, log: log)
        try await s.app().test(.live) { client in
            let port = client.port!
            let slowHeaders = try await onOwnThread {
                let connection = try RawConnection(port: port)
                let start = ContinuousClock.now
                connection.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  // and nothing more
                let eof = try connection.readToEOF()
                return (eof, ContinuousClock.now - start)
            }
            #expect(slowHeaders.0)
            #expect(Self.closeReasons(log) == ["request_read_timeout"])
            #expect(slowHeaders.1 >= .seconds(1), "\(slowHeaders.1)")
            // A body of 100 bytes, one byte every 100 ms at most (the pace of
            // the trickle; the service closing ends it early): each part would
            // restart an idle timer; the read deadline cuts it.
            let trickle = try await onOwnThread {
                let connection = try RawConnection(port: port)
                let start = ContinuousClock.now
                connection.send("POST /v1/manifest HTTP/1.1\r\nHost: 127.0.0.1\r\nX-ArtCache-Signature: abc\r\nX-ArtCache-Expires: \(Int(Date().timeIntervalSince1970) + 240)\r\n"
                                + "Content-Length: 100\r\n\r\n")
                var sent = 0
                while sent < 100, !connection.closedWithin(milliseconds: 100) {
                    guard connection.send("x") else { break }
                    sent += 1
                }
                return (sent, try connection.readToEOF(), ContinuousClock.now - start)
            }
            #expect(trickle.0 < 100, "the whole body went in: \(trickle.0) bytes")
            #expect(trickle.1)
            #expect(Self.closeReasons(log) == ["request_read_timeout", "request_read_timeout"])
            #expect(trickle.2 >= .seconds(1), "\(trickle.2)")
        }
        try await s.close()
    }

    /// Memory hits are answered in front of Hummingbird's connection
    /// handler; the idle deadline still sees them.
    @Test func aConnectionBusyWithMemoryHitsIsNotIdle() async throws {
        // Idle 2 s: hits 400 ms apart (the pace of the hits) leave a margin
        // for a client thread descheduled on a loaded machine.
        let log = LogCounter()
        let s = try await Self.harness(idle: 2, read: 30, log: log)
        try s.register("a.jpg")
        let path = try s.path("/img/a.jpg", "40x40")
        try await s.app().test(.live) { client in
            let port = client.port!
            let hitsBefore = s.service.channelHits.load(ordering: .relaxed)
            // One connection only (another one's idle close would be logged too).
            let busy = try await onOwnThread {
                let connection = try RawConnection(port: port)
                connection.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                var statuses = [try connection.readResponse()?.status ?? 0]  // now in memory
                let start = ContinuousClock.now
                var lastHit = start
                // 12 hits 400 ms apart: 4.8 s, more than two idle deadlines, on one connection.
                for _ in 0..<12 {
                    lastHit = ContinuousClock.now  // before the answer the idle time counts from
                    connection.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    statuses.append(try connection.readResponse()?.status ?? 0)
                    if connection.closedWithin(milliseconds: 400) { break }
                }
                let busyFor = ContinuousClock.now - start
                let closedWhileBusy = Self.closeReasons(log)
                let eof = try connection.readToEOF()
                return (statuses, busyFor, eof, ContinuousClock.now - lastHit, closedWhileBusy)
            }
            #expect(busy.0 == Array(repeating: 200, count: 13))
            #expect(busy.1 > .seconds(4))
            #expect(busy.4.isEmpty, "closed while busy: \(busy.4)")
            // The first hit may follow the cold request to the router: the
            // connection hands requests to the bytes handler again once the
            // router's answer is written, which the client can outrun on a
            // loaded machine (seen once in a full run: 11).
            #expect(s.service.channelHits.load(ordering: .relaxed) - hitsBefore >= 11, "answered in the channel pipeline")
            #expect(busy.2, "closed once idle")
            #expect(Self.closeReasons(log) == ["idle_timeout"])
            #expect(busy.3 >= .seconds(2), "\(busy.3)")
        }
        try await s.close()
    }

    @Test func aDeclaredBodyOverTheLimitIs413OnTheHeadersAndTheConnectionCloses() async throws {
        let s = try await Self.harness(idle: 30, read: 30) { $0.service.manifestMaxBody = 1000 }
        try await s.app().test(.live) { client in
            let port = client.port!
            let heads = [
                "POST /v1/manifest HTTP/1.1\r\nHost: 127.0.0.1\r\nX-ArtCache-Signature: abc\r\nX-ArtCache-Expires: \(Int(Date().timeIntervalSince1970) + 240)\r\nContent-Length: 1000000000000\r\n\r\n"
                    + String(repeating: "x", count: 100),
                "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n",
                // chunked: counted while it streams, by the route
                "POST /v1/manifest HTTP/1.1\r\nHost: 127.0.0.1\r\nX-ArtCache-Signature: abc\r\nX-ArtCache-Expires: \(Int(Date().timeIntervalSince1970) + 240)\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "7d0\r\n" + String(repeating: "x", count: 2000) + "\r\n",
            ]
            for head in heads {
                let answer = try await onOwnThread {
                    let connection = try RawConnection(port: port)
                    let start = ContinuousClock.now
                    connection.send(head)
                    let response = try connection.readResponse()
                    let eof = try connection.readToEOF()
                    return (response, eof, ContinuousClock.now - start)
                }
                #expect(answer.0?.status == 413, "\(head.prefix(40))")
                #expect(answer.0?.headers["x-artcache-error"] == "body_too_large")
                #expect(answer.0?.headers["connection"] == "close")
                #expect(answer.1, "closed, not drained")
                #expect(answer.2 < .seconds(10), "at once, not at a deadline: \(answer.2)")
            }
        }
        try await s.close()
    }

    @Test func anUnsignedManifestIs401AtOnceWithoutItsBody() async throws {
        let s = try await Self.harness(idle: 30, read: 30)
        try await s.app().test(.live) { client in
            let port = client.port!
            let answer = try await onOwnThread {
                let connection = try RawConnection(port: port)
                connection.send("POST /v1/manifest HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n")  // the body held back
                let response = try connection.readResponse()
                return (response, try connection.readToEOF())
            }
            #expect(answer.0?.status == 401)
            #expect(answer.0?.headers["x-artcache-error"] == "missing_signature")
            #expect(answer.1)
        }
        try await s.close()
    }

    /// 100 connections each send an unsigned 2 MiB manifest at once: each is
    /// answered 401 from its headers and its body dropped as it arrives,
    /// never held (it used to be buffered whole: 236 MiB).
    @Test func unsignedBodiesAreNeverBuffered() async throws {
        let s = try await Self.harness(idle: 30, read: 30)
        try await s.app().test(.live) { client in
            let port = client.port!
            let before = try #require(ProcessMemory.residentBytes())
            let statuses = try await onOwnThread {
                let body = [UInt8](repeating: UInt8(ascii: "x"), count: 2 << 20)
                let connections = try (0..<100).map { _ in try RawConnection(port: port) }
                for connection in connections {
                    connection.send("POST /v1/manifest HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n\r\n")
                    _ = connection.send(bytes: body)
                }
                return try connections.map { connection in
                    let status = try connection.readResponse()?.status ?? 0
                    return try connection.readToEOF() ? status : -1
                }
            }
            let after = try #require(ProcessMemory.residentBytes())
            #expect(statuses == Array(repeating: 401, count: 100))
            #expect(after - before < 60 << 20, "RSS grew by \((after - before) >> 20) MiB")
        }
        try await s.close()
    }

    /// A manifest waiting for a slot is cancelled when its client leaves:
    /// its place in the queue is freed while the slot is still taken.
    @Test func aClientLeavingCancelsItsManifest() async throws {
        let s = try await Self.harness(idle: 30, read: 30) {
            $0.service.maxInflight = 1
            $0.service.queue = 4
        }
        try s.register("a.jpg")
        let body = Array("""
            {"total_count":1,"items":[{"id":41,"avatar_url":"\(s.origin.url("/img/m.jpg"))"}]}
            """.utf8)
        try await s.app().test(.live) { client in
            let port = client.port!
            let gated = Task { try await HTTPGet.get("http://127.0.0.1:\(port)" + (try s.path("/gate/a.jpg", "50x50"))) }
            await s.origin.waitForRequest("/gate/a.jpg")  // the one slot is taken
            let connection = try await onOwnThread {
                let connection = try RawConnection(port: port)
                connection.send("POST /v1/manifest HTTP/1.1\r\nHost: 127.0.0.1\r\n\(s.signer.manifestHead(body))"
                                + "Content-Length: \(body.count)\r\n\r\n")
                _ = connection.send(bytes: body)
                return connection
            }
            await s.service.admission.waitUntilQueued(1)
            connection.close()
            await s.service.admission.waitUntilQueued(atMost: 0)
            #expect(s.service.admission.load.inflight == 1, "the gated image still holds the slot")
            s.origin.openGate()
            #expect(try await gated.value.status == 200)
            #expect(s.origin.requestCount("/img/m.jpg") == 0, "the manifest never ran")
        }
        try await s.close()
    }

    /// Manifests and info wait for a slot like images, under the request's
    /// deadline: 503 when it passes (a manifest whose body was never read
    /// closes its connection).
    @Test func manifestsAndInfoAreAdmittedUnderTheDeadline() async throws {
        let s = try await Self.harness(idle: 30, read: 30) {
            $0.service.maxInflight = 1
            $0.service.queue = 4
            $0.service.timeout = 1
        }
        try s.register("a.jpg")
        let body = Array("""
            {"total_count":1,"items":[{"id":41,"avatar_url":"\(s.origin.url("/img/m.jpg"))"}]}
            """.utf8)
        let info = s.signer.infoPath(for: s.origin.url("/img/a.jpg"))
        try await s.app().test(.live) { client in
            let port = client.port!
            try await s.service.admission.acquire()  // the one slot, held by the test
            let answers = try await onOwnThread {
                let manifest = try RawConnection(port: port)
                manifest.send("POST /v1/manifest HTTP/1.1\r\nHost: 127.0.0.1\r\n\(s.signer.manifestHead(body))"
                              + "Content-Length: \(body.count)\r\n\r\n")
                _ = manifest.send(bytes: body)
                let infoConnection = try RawConnection(port: port)
                infoConnection.send("GET \(info) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                return (try manifest.readResponse(), try manifest.readToEOF(), try infoConnection.readResponse())
            }
            #expect(answers.0?.status == 503 && answers.0?.headers["x-artcache-error"] == "service_timeout")
            #expect(answers.0?.headers["connection"] == "close" && answers.1, "its body unread: closed")
            #expect(answers.2?.status == 503 && answers.2?.headers["x-artcache-error"] == "service_timeout")
            s.service.admission.release()
            #expect(s.origin.requestCount("/img/m.jpg") == 0)
        }
        try await s.close()
    }

    /// Nothing of a finished request stays registered on its connection.
    @Test func finishedRequestsLeaveNothingOnTheirConnection() async throws {
        let s = try await Self.harness(idle: 3000, read: 3000)
        let names = ["a.jpg", "b.jpg", "c.jpg"]
        for name in names { try s.register(name) }
        try await s.app().test(.live) { live in try await PatientClient.with(port: live.port!) { client in
            for name in names {
                let response = try await client.execute(uri: try s.path("/img/\(name)", "40x40"), method: .get)
                #expect(response.status == .ok)
                #expect(response.headers[.artcacheSource] == "network")
            }
            let watches = s.service.connections.withLock { Array($0.values) }
            #expect(!watches.isEmpty, "the client's connection is open")
            #expect(watches.map(\.registered).allSatisfy { $0 == 0 })
        } }
        try await s.close()
    }
}

/// A blocking HTTP/1.1 client socket to 127.0.0.1 (call it from
/// ``onOwnThread(_:)``), with a receive timeout so a test fails instead of
/// hanging.
///
/// `@unchecked Sendable`: one task uses it at a time (created, used and
/// closed in turn); its descriptor is set once, closed once under `lock`.
final class RawConnection: @unchecked Sendable {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let lock = NSLock()
    private var closed = false

    init(port: Int, receiveTimeout seconds: Int = 20) throws {
        fd = try connectLoopback(port: port, timeout: seconds, sendTimeout: true)
    }

    deinit { close() }

    func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            Glibc.close(fd)
        }
    }

    /// Sends `text`; false when the peer is gone.
    @discardableResult
    func send(_ text: String) -> Bool { send(bytes: Array(text.utf8)) }

    /// Sends `bytes` (no SIGPIPE); false when the peer is gone.
    @discardableResult
    func send(bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }

    /// Reads one response: its status and lower-cased headers (the body, by
    /// Content-Length, read and dropped); nil at end of file.
    func readResponse() throws -> (status: Int, headers: [String: String])? {
        let separator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = buffer.indices.first(where: { buffer[$0...].starts(with: separator) }) {
                let (statusLine, headers) = responseHead(buffer[..<end])
                let length = Int(headers["content-length"] ?? "0") ?? 0
                while buffer.count < end + 4 + length {
                    guard try fill() else { return nil }
                }
                buffer.removeFirst(end + 4 + length)
                let status = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                return (status, headers)
            }
            guard try fill() else { return nil }
        }
    }

    /// Reads until the server closes: true at end of file (or a reset),
    /// throws when the receive timeout passes first.
    func readToEOF() throws -> Bool {
        while try fill() { buffer.removeAll() }
        return true
    }

    /// Whether the server closes (or sends anything) within `milliseconds`:
    /// a poll for input, which also paces a trickling client.
    func closedWithin(milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) > 0
    }

    /// More bytes into the buffer: false at end of file or a reset.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &chunk, chunk.count, 0)
        if count > 0 {
            buffer += chunk[..<count]
            return true
        }
        if count == 0 || errno == ECONNRESET { return false }
        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
}
