@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCacheStore
import Foundation
import Testing

/// Issue 49 item 6: one slow URL does not hold a result set hostage.
/// `artcache prefetch` run as the built binary against a loopback origin.
@Suite("One slow URL", .timeLimit(.minutes(3)))
struct SlowURLTests {
    /// A result set of images and one URL that trickles (256 B/s, under the
    /// 1 kB/s `low_speed_limit`): the low-speed abort is not retried in the
    /// same run; the URL goes to the retry queue as `timeout`.
    @Test func aTrickleIsNotRetriedInTheSameRun() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let jpeg = try Fixtures.image(suffix: ".jpg")
        var urls: [String] = []
        for i in 0..<10 {
            origin.register("\(i).jpg", .init(body: jpeg, contentType: "image/jpeg"))
            urls.append(origin.url("/img/\(i).jpg"))
        }
        origin.register("big.jpg", .init(body: Data(repeating: 0xAB, count: 64_000), contentType: "image/jpeg"))
        let trickle = "/slow/1000/big.jpg"
        urls.append(origin.url(trickle))
        let input = dir.write("urls.txt", urls.joined(separator: "\n") + "\n")
        let cache = dir.file("cache")
        let run = try await CLI.run(["prefetch", input, "--cache-dir", cache, "--json", "--no-thumbnails"],
                                    environment: ["ARTCACHE_DOWNLOAD_LOW_SPEED_TIME": "1s"])
        #expect(run.status == 1, "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(summary["downloaded"] as? Int == 10)
        #expect((summary["failures"] as? [String: Int]) == ["timeout": 1])
        #expect(origin.requestCount(trickle) == 1, "the low-speed abort was retried in the same run")
        let store = try await CacheStore.open(settings: Fixtures.settings(cache))
        let queued = try await store.retries.all()
        #expect(queued.map(\.url) == [origin.url(trickle)])
        #expect(queued.map(\.reason) == ["timeout"])
    }

    /// When nothing has finished for 5 s the progress output names what it
    /// waits for: `waiting on 1: host/path (N s, B)`.
    @Test func aStalledPrefetchSaysWhatItWaitsFor() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let jpeg = try Fixtures.image(suffix: ".jpg")
        for name in ["a.jpg", "b.jpg", "held.jpg"] { origin.register(name, .init(body: jpeg, contentType: "image/jpeg")) }
        let urls = [origin.url("/img/a.jpg"), origin.url("/img/b.jpg"), origin.url("/gate/held.jpg")]
        let input = dir.write("urls.txt", urls.joined(separator: "\n") + "\n")
        // The held transfer is not cut by the low-speed rule (20 s) while a
        // loaded machine keeps the test from opening the gate.
        let (child, out, err) = try CLI.start(["prefetch", input, "--cache-dir", dir.file("cache"), "--no-thumbnails"],
                                              environment: ["ARTCACHE_DOWNLOAD_LOW_SPEED_TIME": "150s", "ARTCACHE_DOWNLOAD_TIMEOUT": "150s"])
        // Read stderr until the waiting line (or the end: the gate lets go after 30 s by itself).
        let seen = await Self.read(err, until: "waiting on")
        origin.openGate()
        let rest = await CLI.exit(child, out, err)
        #expect(rest.status == 0, "\(seen)\(rest.stderr)")
        let line = try #require(seen.split(separator: "\n").first { $0.contains("waiting on") }, "no waiting line in \(seen)")
        let expected = /waiting on 1: 127\.0\.0\.1:(\d+)\/gate\/held\.jpg \((\d+) s, 0 B\)/
        let match = try #require(line.firstMatch(of: expected), "\(line)")
        #expect(Int(match.1) == origin.port)
        #expect((Int(match.2) ?? 0) >= 5, "\(line)")
    }

    /// Reads `pipe` until its text contains `marker` (or it ends), on a thread
    /// of its own (never Swift's cooperative pool).
    static func read(_ pipe: Pipe, until marker: String) async -> String {
        await read(pipe) { $0.contains(marker) }
    }

    /// Reads `pipe` until a line of it has all of `parts` (or it ends).
    static func read(_ pipe: Pipe, untilALineHas parts: [String]) async -> String {
        await read(pipe) { text in text.split(separator: "\n").contains { line in parts.allSatisfy(line.contains) } }
    }

    static func read(_ pipe: Pipe, until done: @escaping @Sendable (String) -> Bool) async -> String {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var text = Data()
                while !done(String(decoding: text, as: UTF8.self)) {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    text.append(chunk)
                }
                continuation.resume(returning: String(decoding: text, as: UTF8.self))
            }
        }
    }
}

/// Two processes on one cache download a URL once: a lease in the index.
@Suite("Download leases between processes", .timeLimit(.minutes(3)))
struct DownloadLeaseTests {
    /// The first process holds the lease on one URL (the origin holds its
    /// download) when the second one starts: the second says it waits for
    /// the first (its log, `--verbose`), and only then is the download let
    /// through. Every URL is downloaded once, by the first.
    @Test func twoPrefetchesOfTheSameURLsDownloadEachOnce() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let jpeg = try Fixtures.image(suffix: ".jpg")
        var urls = [origin.url("/gate/0.jpg")]
        for i in 0..<64 {
            origin.register("\(i).jpg", .init(body: jpeg, contentType: "image/jpeg"))
            if i > 0 { urls.append(origin.url("/img/\(i).jpg")) }
        }
        let input = dir.write("urls.txt", urls.joined(separator: "\n") + "\n")
        let cache = dir.file("cache")
        let arguments = ["prefetch", input, "--cache-dir", cache, "--json", "--no-thumbnails"]
        // However long a loaded machine takes to start the second process,
        // the held download is not cut (nor retried) meanwhile.
        origin.gateLimit = 120
        let patient = ["ARTCACHE_DOWNLOAD_RETRIES": "0", "ARTCACHE_DOWNLOAD_TIMEOUT": "150s", "ARTCACHE_DOWNLOAD_LOW_SPEED_TIME": "150s"]
        let first = try CLI.start(arguments, environment: patient)
        // Every URL asked for: the first has taken every lease, and holds the gated one's.
        await origin.waitForRequests(64)
        let second = try CLI.start(arguments + ["--verbose"], environment: patient)
        // A second process that asked the origin too would never say so: the
        // gate lets its request through after gateLimit, and it ends without it.
        let waiting = ["waiting for the download of another process", "/gate/0.jpg", "pid=\(first.0.processIdentifier)"]
        let said = await SlowURLTests.read(second.2, untilALineHas: waiting)
        #expect(said.split(separator: "\n").contains { line in waiting.allSatisfy(line.contains) },
                "the second process waits for the first one's download: \(said.suffix(2000))")
        origin.openGate()
        var downloaded: [Int] = []
        for (child, out, err) in [first, second] {
            let run = await CLI.exit(child, out, err)
            #expect(run.status == 0, "\(run.stderr.suffix(2000))")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect((summary["downloaded"] as? Int ?? 0) + (summary["cached"] as? Int ?? 0) == 64, "\(summary)")
            downloaded.append(summary["downloaded"] as? Int ?? 0)
        }
        #expect(downloaded == [64, 0], "the first downloads everything, the second waits for it")
        #expect(origin.totalRequests == 64, "origin requests: \(origin.totalRequests)")
        let twice = urls.filter { origin.requestCount(URL(string: $0)!.path) != 1 }
        #expect(twice.isEmpty, "not requested exactly once: \(twice)")
    }

    /// A holder killed mid-download leaves its lease behind; the next
    /// process does not wait for its expiry (here 40 s: no retries, a 30 s
    /// timeout): the holder's pid is gone, so the lease has lapsed.
    @Test func aDeadHoldersLeaseLapses() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        origin.register("held.jpg", .init(body: try Fixtures.image(suffix: ".jpg"), contentType: "image/jpeg"))
        let input = dir.write("urls.txt", origin.url("/gate/held.jpg") + "\n")
        let cache = dir.file("cache")
        let environment = ["ARTCACHE_DOWNLOAD_RETRIES": "0", "ARTCACHE_DOWNLOAD_TIMEOUT": "30s"]
        let (holder, out, err) = try CLI.start(["prefetch", input, "--cache-dir", cache, "--no-thumbnails"],
                                               environment: environment)
        await origin.waitForRequest("/gate/held.jpg")
        kill(holder.processIdentifier, SIGKILL)
        _ = await CLI.exit(holder, out, err)
        let store = try await CacheStore.open(settings: Fixtures.settings(cache))
        #expect(try await store.leases.count() == 1, "the killed holder's lease is left behind")
        try await store.close()
        origin.openGate()
        let started = ContinuousClock.now
        let next = try await CLI.run(["prefetch", input, "--cache-dir", cache, "--no-thumbnails", "--json"],
                                     environment: environment)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(ContinuousClock.now - started < .seconds(20), "waited for the dead holder's lease to expire")
        #expect(origin.requestCount("/gate/held.jpg") == 2)
    }

    /// A holder killed and not yet reaped by its parent (a zombie: the
    /// reliability suite's R1 kills prefetches with SIGKILL and waits for
    /// them later) still has its pid, but holds nothing: its lease lapses
    /// (R1 saw the next prefetch wait for the lease's expiry).
    @Test func aZombieHolderIsNotAlive() throws {
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("60"), nil]
        defer { argv.forEach { free($0) } }
        #expect(posix_spawn(&pid, "/bin/sleep", nil, nil, argv, environ) == 0)
        #expect(DownloadLeases.isAlive(pid))
        kill(pid, SIGKILL)
        var info = siginfo_t()
        #expect(waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == 0)  // it has exited, not been reaped
        #expect(kill(pid, 0) == 0, "a zombie's pid still answers kill(0)")
        #expect(!DownloadLeases.isAlive(pid))
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }

    /// Two prefetches of one trickling URL: one downloads (and fails,
    /// `timeout`); the other waits for that result and takes it as its
    /// own, without asking the origin.
    @Test func aHoldersFailureIsTheWaitersResult() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        origin.register("big.jpg", .init(body: Data(repeating: 0xAB, count: 64_000), contentType: "image/jpeg"))
        let trickle = "/slow/1000/big.jpg"
        let input = dir.write("urls.txt", origin.url(trickle) + "\n")
        let arguments = ["prefetch", input, "--cache-dir", dir.file("cache"), "--json", "--no-thumbnails"]
        let environment = ["ARTCACHE_DOWNLOAD_LOW_SPEED_TIME": "3s"]
        let first = try CLI.start(arguments, environment: environment)
        let second = try CLI.start(arguments, environment: environment)
        for (child, out, err) in [first, second] {
            let run = await CLI.exit(child, out, err)
            #expect(run.status == 1, "\(run.stderr)")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect((summary["failures"] as? [String: Int]) == ["timeout": 1], "\(summary)")
        }
        #expect(origin.requestCount(trickle) == 1)
    }

    /// A download cancelled mid-transfer gives its lease up (the release
    /// runs although its task is cancelled): another store on the cache
    /// downloads at once instead of waiting for the lease's expiry (here
    /// 410 s: a 100 s timeout).
    @Test func aCancelledDownloadGivesItsLeaseUp() async throws {
        let h = try await LoopbackHarness { $0.download.timeout = 100 }
        h.origin.register("held.jpg", .init(body: try Fixtures.image(suffix: ".jpg"), contentType: "image/jpeg"))
        let url = h.url("/gate/held.jpg")
        let first = Task { try await h.pipeline.original(url) }
        await h.origin.waitForRequest("/gate/held.jpg")
        first.cancel()
        _ = await first.result
        h.origin.openGate()
        let other = try await Fixtures.pipeline(h.dir.path) { $0.download.timeout = 100 }
        let outcome = try await other.original(url)
        #expect(outcome.source == .downloaded)
        #expect(h.origin.requestCount("/gate/held.jpg") == 2)
        try await other.close()
        try await h.pipeline.close()
    }
}
