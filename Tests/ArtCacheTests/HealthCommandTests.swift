import ArtCacheOrigin
import Foundation
import Testing
@_spi(Benchmarks) @testable import ArtCacheCore
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
