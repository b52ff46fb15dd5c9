@testable import ArtCacheCore
import ArtCacheOrigin
import Foundation
import Testing

/// Issue 49, item 7: a run that failed says why, as the user meets it
/// (the built binary; loopback only: held ports and a local origin).
@Suite("artcache CLI: failures say why", .timeLimit(.minutes(1)))
struct CLIFailureTests {
    static let keys = ["ARTCACHE_SERVICE_KEYS": String(repeating: "ab", count: 32)]

    /// A host that refuses every connect: the URL that was tried says the
    /// cause and the tries, and that the host is offline, not "not tried".
    @Test func repeatedFailuresNameTheCauseAndTheTries() async throws {
        let dir = TempDir()
        let held = try HeldPort()
        let list = dir.write("u.txt", held.baseURL + "/img/x.jpg\n")
        // 3 tries (retries 2), offline after 3; backoff of a millisecond: no waiting.
        let result = try await CLI.run(["prefetch", list, "--cache-dir", dir.file("cache")],
                                       environment: ["ARTCACHE_DOWNLOAD_RETRIES": "2", "ARTCACHE_DOWNLOAD_OFFLINE_AFTER": "3",
                                                     "ARTCACHE_DOWNLOAD_RETRY_BASE_DELAY": "0.001",
                                                     "ARTCACHE_DOWNLOAD_RETRY_MAX_DELAY": "0.001"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("127.0.0.1:\(held.port): connection refused (3 tries); host offline for 30 s"),
                "\(result.stderr)")
        #expect(!result.stderr.contains("not tried"), "\(result.stderr)")
        // Fewer failures than offline_after: the cause and the tries, no offline host.
        let once = try await CLI.run(["prefetch", list, "--cache-dir", dir.file("cache")],
                                     environment: ["ARTCACHE_DOWNLOAD_RETRIES": "1", "ARTCACHE_DOWNLOAD_OFFLINE_AFTER": "3",
                                                   "ARTCACHE_DOWNLOAD_RETRY_BASE_DELAY": "0.001",
                                                   "ARTCACHE_DOWNLOAD_RETRY_MAX_DELAY": "0.001"])
        #expect(once.status == 1)
        #expect(once.stderr.contains("connect: ") && once.stderr.contains("(2 tries)") && !once.stderr.contains("offline"),
                "\(once.stderr)")
        withExtendedLifetime(held) {}
    }

    /// `--contact-sheet` into a folder that does not exist fails before
    /// anything is downloaded, naming the folder; no Foundation error text.
    @Test func contactSheetFolderIsCheckedFirst() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        origin.register("a.jpg", .init(body: try Fixtures.image(suffix: ".jpg"), contentType: "image/jpeg"))
        let list = dir.write("u.txt", origin.url("/img/a.jpg") + "\n")
        let sheet = dir.file("no-such-folder") + "/sheet.png"
        let result = try await CLI.run(["prefetch", list, "--contact-sheet", sheet, "--cache-dir", dir.file("cache")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("--contact-sheet \(sheet): the folder \(dir.file("no-such-folder")) does not exist"),
                "\(result.stderr)")
        #expect(origin.requestCount("/img/a.jpg") == 0, "checked before the prefetch")
        #expect(!result.stderr.contains("NSCocoaErrorDomain"))
        // `get -o` into a missing folder: the file and the system's reason.
        let out = dir.file("missing") + "/a.jpg"
        let got = try await CLI.run(["get", origin.url("/img/a.jpg"), "-o", out, "--cache-dir", dir.file("cache")])
        #expect(got.status == 1)
        #expect(got.stderr.contains("cannot write \(out): no such file or directory"), "\(got.stderr)")
        #expect(!got.stderr.contains("NSCocoaErrorDomain") && !got.stderr.contains("CocoaError"), "\(got.stderr)")
    }

    /// A `--config` that is a folder: the system's reason, not Foundation's
    /// `NSCocoaErrorDomain error 256`.
    @Test func aConfigThatCannotBeReadSaysWhy() async throws {
        let dir = TempDir()
        let result = try await CLI.run(["stats", "--config", dir.path, "--cache-dir", dir.file("cache")])
        #expect(result.status == 78)
        #expect(result.stderr == "artcache: error: configuration error: \(dir.path): cannot read: is a directory\n",
                "\(result.stderr)")
    }

    /// `serve` on a port another socket listens on: one line, exit 1.
    @Test func serveOnABusyPortSaysSo() async throws {
        let dir = TempDir()
        let busy = try await OriginServer.start()
        defer { busy.stop() }
        let result = try await CLI.run(["serve", "--listen", "127.0.0.1:\(busy.port)", "--cache-dir", dir.file("cache")],
                                       environment: Self.keys)
        #expect(result.status == 1)
        #expect(result.stderr == "artcache: error: cannot listen on 127.0.0.1:\(busy.port): address already in use\n",
                "\(result.stderr)")
    }

    /// `prefetch --via` to a front that refuses connects: said once, not per URL.
    @Test func viaADeadFrontSaysSoOnce() async throws {
        let dir = TempDir()
        let front = try HeldPort()
        let list = dir.write("u.txt", (1...5).map { "https://example.com/\($0).jpg" }.joined(separator: "\n"))
        let result = try await CLI.run(["prefetch", list, "--via", front.baseURL, "--concurrency", "1"], environment: Self.keys)
        #expect(result.status == 1)
        #expect(result.stderr == "artcache: error: cannot reach the front \(front.baseURL): connection refused; 5 not warmed\n",
                "\(result.stderr)")
        #expect(result.stdout.contains("warmed 0 of 5"), "\(result.stdout)")
        withExtendedLifetime(front) {}
    }
}
