import ArtCacheOrigin
import Foundation
import Hummingbird
import Testing
@testable import ArtCacheCore
@testable import ArtCacheServer

/// `artcache health [--url URL]`: exit 0/1 for container health checks.
/// (Against a live `serve`: `ServiceLiveTests.serveCommandRunsSignsAndStopsOnSIGTERM`.)
@Suite("artcache health", .timeLimit(.minutes(2)))
struct HealthCommandTests {
    @Test func targetsAskHealthOfAServiceURL() throws {
        #expect(try HealthProbe.target("http://127.0.0.1:8080") == ("127.0.0.1", 8080, "/health"))
        #expect(try HealthProbe.target("http://127.0.0.1:8080/") == ("127.0.0.1", 8080, "/health"))
        #expect(try HealthProbe.target("http://localhost/health") == ("localhost", 80, "/health"))
        #expect(try HealthProbe.target("HTTP://[::1]:9/custom?x=1") == ("::1", 9, "/custom?x=1"))
        for bad in ["https://127.0.0.1:8080", "127.0.0.1:8080", "ftp://x/", "http://", "not a url", "http://h:0/"] {
            let error = #expect(throws: ArtCacheError.self, "\(bad)") { try HealthProbe.target(bad) }
            #expect(error?.code == .invalidURL, "\(bad)")
        }
    }

    /// A name that resolves to several addresses (`localhost`: `::1`, then
    /// `127.0.0.1`, where both exist): libcurl tries each in turn. The
    /// addresses are given (CURLOPT_RESOLVE): nothing listens on the first
    /// (127.0.0.2 at the live port), the origin on the second.
    @Test func everyAddressIsTriedInTurn() async throws {
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let url = "http://service.test:\(origin.port)/status/200"
        let answer = try await HealthProbe.check(url, timeout: .seconds(30), addresses: ["127.0.0.2", "127.0.0.1"])
        #expect(answer.status == 200)
        #expect(origin.requestCount("/status/200") == 1)
        let alone = await #expect(throws: ArtCacheError.self) {
            _ = try await HealthProbe.check(url, timeout: .seconds(30), addresses: ["127.0.0.2"])
        }
        #expect(alone?.code == .network(.connect) && alone?.message.contains("cannot connect to service.test:\(origin.port)") == true,
                "\(String(describing: alone))")
        let both = await #expect(throws: ArtCacheError.self) {
            _ = try await HealthProbe.check(url, timeout: .seconds(30), addresses: ["127.0.0.2", "127.0.0.3"])
        }
        #expect(both?.code == .network(.connect), "the last address's failure: \(String(describing: both))")
        #expect(origin.requestCount("/status/200") == 1, "the failed checks reached no origin")
    }

    /// The timeout covers the whole check, not each address or each read:
    /// three addresses that accept and never answer take one timeout.
    @Test func oneDeadlineForTheWholeCheck() async throws {
        let silent = try SilentListener.onOnePort(["127.0.0.1", "127.0.0.2", "127.0.0.3"])
        defer { silent.forEach { $0.close() } }
        let started = ContinuousClock.now
        let error = await #expect(throws: ArtCacheError.self) {
            _ = try await HealthProbe.check("http://service.test:\(silent[0].port)/", timeout: .milliseconds(600),
                                            addresses: ["127.0.0.1", "127.0.0.2", "127.0.0.3"])
        }
        #expect(error?.code == .network(.timeout), "\(String(describing: error))")
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(550), "waited for the deadline: \(elapsed)")
        // One deadline: the first address used it up, so the others were
        // never tried (a timeout per address would have connected to each).
        // Seen in the listeners' backlogs, not on a clock.
        #expect(silent.map(\.hasPendingConnection) == [true, false, false])
    }

    /// The status comes from the answer, the summary from its body's first
    /// line, however the body is framed: here chunked (no Content-Length),
    /// by a real HTTP server on loopback.
    @Test func aChunkedAnswerIsRead() async throws {
        let router = Router()
        router.get("/health") { _, _ -> Response in
            Response(status: .serviceUnavailable, headers: [.contentType: "text/plain"], body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "unhealthy: sto"))
                try await writer.write(ByteBuffer(string: "rage\nthe second line\n"))
                try await writer.finish(nil)
            })
        }
        try await Application(router: router).test(.live) { client in
            let framing = try await client.execute(uri: "/health", method: .get)
            #expect(framing.headers[.transferEncoding] == "chunked" && framing.headers[.contentLength] == nil)
            let port = try #require(client.port)
            let answer = try await HealthProbe.check("http://127.0.0.1:\(port)", timeout: .seconds(30))
            #expect(answer == .init(status: 503, summary: "unhealthy: storage"))
        }
    }

    @Test func theSummaryIsTheBodysFirstLine() {
        #expect(HealthProbe.summary(Data("ok\n".utf8)) == "ok")
        #expect(HealthProbe.summary(Data("unhealthy: storage\r\nmore".utf8)) == "unhealthy: storage")
        #expect(HealthProbe.summary(Data()) == "")
        #expect(HealthProbe.summary(Data(String(repeating: "x", count: 500).utf8)).count == 200)
    }

    @Test func inProcessCheckOfAWorkingCacheExitsZero() async throws {
        let dir = TempDir()
        let result = try await CLI.run(["health", "--cache-dir", dir.file("c")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "ok (\(dir.file("c")))\n")
        let json = try await CLI.json(["health", "--json", "--cache-dir", dir.file("c")])
        #expect(json["healthy"] as? Bool == true)
    }

    /// A cache directory that cannot be one (a regular file is in its place):
    /// exit 1 and the reason, on stderr or in the JSON.
    @Test func inProcessCheckOfABrokenCacheExitsOne() async throws {
        let dir = TempDir()
        let notADirectory = dir.write("c", "a file where the cache should be")
        let result = try await CLI.run(["health", "--cache-dir", notADirectory])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("artcache: error: unhealthy: storage"), "\(result.stderr)")
        let json = try await CLI.run(["health", "--json", "--cache-dir", notADirectory])
        #expect(json.status == 1)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["healthy"] as? Bool == false)
    }

    /// Nothing listens on a held port: exit 1, a connect failure, quickly.
    @Test func aServiceThatIsNotThereIsUnhealthy() async throws {
        let held = try HeldPort()
        let result = try await CLI.run(["health", "--url", held.baseURL, "--timeout", "2"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot connect to 127.0.0.1:\(held.port)"), "\(result.stderr)")
        let json = try await CLI.json(["health", "--url", held.baseURL, "--json"])
        #expect(json["healthy"] as? Bool == false)
        #expect(json["status"] == nil)
        let https = try await CLI.run(["health", "--url", "https://127.0.0.1:\(held.port)"])
        // Not an http:// URL of a service: usage (issue 59), not "unhealthy".
        #expect(https.status == 64 && https.stderr.contains("http://") && !https.stderr.contains("unhealthy"), "\(https.stderr)")
        let timeout = try await CLI.run(["health", "--url", held.baseURL, "--timeout", "0"])
        #expect(timeout.status == 64, "a bad option is a usage error: \(timeout.stderr)")
    }
}

/// A loopback socket that listens and never accepts: connects succeed (the
/// kernel's backlog) and nothing is ever answered.
final class SilentListener: @unchecked Sendable {
    // @unchecked Sendable: `fd` is set once in init; `close()` runs once, at the test's end.
    let fd: Int32
    let port: Int

    /// Listening on `address` (IPv4), at `port` (0: a free one).
    init(address host: String = "127.0.0.1", port wanted: Int = 0) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = in_port_t(UInt16(wanted).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound, listen(fd, 8) == 0 else {
            if fd >= 0 { _ = Glibc.close(fd) }
            throw ArtCacheError(.network(.connect), "cannot listen on \(host):\(wanted)")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// One listener on each of `addresses`, all at the same port (the
    /// first's free one; another is tried when a later address has it taken).
    static func onOnePort(_ addresses: [String]) throws -> [SilentListener] {
        var lastError: (any Error)?
        for _ in 0..<20 {
            var listeners: [SilentListener] = []
            do {
                for address in addresses {
                    listeners.append(try SilentListener(address: address, port: listeners.first?.port ?? 0))
                }
                return listeners
            } catch {
                lastError = error
                listeners.forEach { $0.close() }
            }
        }
        throw lastError ?? ArtCacheError(.network(.connect), "no common port for \(addresses)")
    }

    func close() { _ = Glibc.close(fd) }

    /// A connection waits in the backlog (someone connected; nobody accepted).
    var hasPendingConnection: Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) > 0 && poller.revents & Int16(POLLIN) != 0
    }
}
