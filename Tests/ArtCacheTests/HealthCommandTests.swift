import ArtCacheOrigin
import Foundation
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
            #expect(throws: ArtCacheError.self, "\(bad)") { try HealthProbe.target(bad) }
            do { _ = try HealthProbe.target(bad) } catch { #expect(error.code == .invalidURL, "\(bad)") }
        }
    }

    /// A name that resolves to several addresses (`localhost`: `::1`, then
    /// `127.0.0.1`, where both exist): each is tried in turn. The address
    /// list is injected (here `localhost` is 127.0.0.1 only).
    @Test func everyAddressIsTriedInTurn() async throws {
        let refused = try HeldPort()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let (refusedPort, livePort) = (refused.port, origin.port)
        let answer = try await HealthProbe.check("http://localhost:\(livePort)/status/200", timeout: .seconds(5)) { _, _ in
            [.loopback(port: refusedPort), .loopback(port: livePort)]
        }
        #expect(answer.status == 200)
        await #expect(throws: ArtCacheError.self) {
            _ = try await HealthProbe.check("http://localhost:\(refusedPort)/", timeout: .seconds(5)) { _, _ in
                [.loopback(port: refusedPort)]
            }
        }
        do {
            _ = try await HealthProbe.check("http://localhost:\(refusedPort)/", timeout: .seconds(5)) { _, _ in
                [.loopback(port: refusedPort), .loopback(port: refusedPort)]
            }
        } catch {
            #expect(error.code == .network(.connect), "the last address's failure: \(error)")
        }
        withExtendedLifetime(refused) {}
    }

    /// The timeout covers the whole check, not each address or each read:
    /// three addresses that accept and never answer take one timeout.
    @Test func oneDeadlineForTheWholeCheck() async throws {
        let silent = try (0..<3).map { _ in try SilentListener() }
        defer { silent.forEach { $0.close() } }
        let ports = silent.map(\.port)
        let started = ContinuousClock.now
        do {
            _ = try await HealthProbe.check("http://localhost:\(ports[0])/", timeout: .milliseconds(600)) { _, _ in
                ports.map { .loopback(port: $0) }
            }
            Issue.record("a silent service answered")
        } catch {
            #expect(error.code == .network(.timeout), "\(error)")
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(550), "waited for the deadline: \(elapsed)")
        // One deadline: the first address used it up, so the others were
        // never tried (a timeout per address would have connected to each).
        // Seen in the listeners' backlogs, not on a clock (a loaded run
        // queues the check behind other blocking work).
        #expect(silent.map(\.hasPendingConnection) == [true, false, false])
    }

    @Test func answersAreReadFromTheStatusLineAndTheBody() throws {
        let ok = try HealthProbe.parse(Array("HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nok\n".utf8), from: "x")
        #expect(ok == .init(status: 200, summary: "ok"))
        let sick = try HealthProbe.parse(Array("HTTP/1.1 503 Service Unavailable\r\n\r\nunhealthy: storage\n".utf8), from: "x")
        #expect(sick == .init(status: 503, summary: "unhealthy: storage"))
        for garbage in ["", "SSH-2.0-OpenSSH\r\n", "HTTP/1.1 abc\r\n\r\n", "HTTP/2 200\r\n\r\n", "HTTP/1.1 999 x\r\n\r\n"] {
            #expect(throws: ArtCacheError.self, "\(garbage)") { try HealthProbe.parse(Array(garbage.utf8), from: "x") }
        }
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
        #expect(https.status == 1 && https.stderr.contains("http://"), "\(https.stderr)")
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

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound, listen(fd, 8) == 0 else { throw ArtCacheError(.network(.connect), "cannot listen on 127.0.0.1:0") }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { _ = Glibc.close(fd) }

    /// A connection waits in the backlog (someone connected; nobody accepted).
    var hasPendingConnection: Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) > 0 && poller.revents & Int16(POLLIN) != 0
    }
}
