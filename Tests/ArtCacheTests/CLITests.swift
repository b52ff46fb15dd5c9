@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheRender
@testable import ArtCacheServiceGrammar
@testable import ArtCacheStore
import Foundation
import Testing

/// The built `artcache` binary, end to end.
@Suite("artcache CLI", .timeLimit(.minutes(3)))
struct CLITests {
    @Test func statsJSONHasTheDocumentedKeys() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        let write = try await CLI.run(["--cache-dir", cache, "--count", "4", "--prefix", "http://Host.Test/x", "--variants"], executable: CLI.stress)
        #expect(write.status == 0, "\(write.stderr)")
        let stats = try await CLI.json(["stats", "--cache-dir", cache, "--json"])
        for key in ["entries", "originals", "variants", "bytes", "max_bytes", "hits", "misses", "evictions", "repairs",
                    "hosts", "oldest_access", "newest_access", "retry_queue"] {
            #expect(stats[key] != nil, "missing key \(key)")
        }
        #expect(stats["entries"] as? Int == 8)
        #expect(stats["originals"] as? Int == 4)
        #expect(stats["variants"] as? Int == 4)
        #expect(stats["hits"] as? Int == 4)  // stress-write looks up item i/2 after each write
        let hosts = try #require(stats["hosts"] as? [String: [String: Int]])
        #expect(hosts["host.test"]?["entries"] == 8)
        let text = try await CLI.run(["stats", "--cache-dir", cache])
        #expect(text.stdout.contains("4 originals, 4 variants"))
    }

    /// `--cache-dir`, `--config` and `-v` work before the subcommand name as
    /// well as after it (docs/commands.md); after it wins when both are given.
    @Test func globalOptionsBeforeOrAfterTheSubcommand() async throws {
        let dir = TempDir()
        let (first, second) = (dir.file("first"), dir.file("second"))
        _ = try await CLI.run(["--cache-dir", first, "--count", "2"], executable: CLI.stress)
        let before = try await CLI.run(["--cache-dir", first, "stats", "--json"])
        #expect(before.status == 0, "\(before.stderr)")
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(before.stdout.utf8)) as? [String: Any])
        #expect(stats["entries"] as? Int == 2, "read the cache named before the subcommand")
        let after = try await CLI.json(["stats", "--cache-dir", first, "--json"])
        #expect(after["entries"] as? Int == 2)
        let both = try await CLI.json(["--cache-dir", second, "stats", "--cache-dir", first, "--json"])
        #expect(both["entries"] as? Int == 2, "the one after the subcommand wins")
        let config = dir.write("c.conf", "[cache]\ndirectory = \"\(first)\"\n")
        let viaConfig = try await CLI.json(["--config", config, "stats", "--json"])
        #expect(viaConfig["entries"] as? Int == 2, "--config before the subcommand")
        let missing = try await CLI.run(["--config", dir.file("absent.conf"), "stats"])
        #expect(missing.status != 0 && missing.stderr.contains("absent.conf"))
        // -v turns logging on, before or after the subcommand; without it, stderr stays quiet.
        let quiet = try await CLI.run(["--cache-dir", first, "stats"])
        #expect(quiet.status == 0 && !quiet.stderr.contains(" debug "), "\(quiet.stderr)")
        for arguments in [["-v", "--cache-dir", first, "stats"], ["stats", "--cache-dir", first, "-v"], ["stats", "--verbose", "--cache-dir", first]] {
            let verbose = try await CLI.run(arguments)
            #expect(verbose.status == 0 && verbose.stderr.contains(" debug "), "\(arguments): \(verbose.stderr)")
        }
    }

    @Test func purgeDryRunThenPurge() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        _ = try await CLI.run(["--cache-dir", cache, "--count", "5", "--prefix", "http://a.test/"], executable: CLI.stress)
        _ = try await CLI.run(["--cache-dir", cache, "--count", "3", "--prefix", "http://b.test/"], executable: CLI.stress)
        let dry = try await CLI.run(["purge", "--host", "a.test", "--dry-run", "--cache-dir", cache])
        #expect(dry.status == 0)
        #expect(dry.stdout.contains("would remove 5 items"))
        #expect(try await CLI.json(["stats", "--cache-dir", cache, "--json"])["entries"] as? Int == 8)
        let purge = try await CLI.json(["purge", "--host", "a.test", "--json", "--cache-dir", cache])
        #expect(purge["removed"] as? Int == 5)
        #expect(purge["dry_run"] as? Bool == false)
        #expect(try await CLI.json(["stats", "--cache-dir", cache, "--json"])["entries"] as? Int == 3)
        let all = try await CLI.run(["purge", "--all", "--cache-dir", cache])
        #expect(all.stdout.contains("removed 3 items"))
    }

    @Test func verifyJSONAndExitStatus() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        _ = try await CLI.run(["--cache-dir", cache, "--count", "3"], executable: CLI.stress)
        let ok = try await CLI.run(["verify", "--cache-dir", cache, "--json"])
        #expect(ok.status == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(ok.stdout.utf8)) as? [String: Any])
        for key in ["rows", "missing_blobs", "size_mismatches", "orphan_blobs", "temp_files", "repaired"] {
            #expect(report[key] != nil, "missing key \(key)")
        }
        let blobName = String(repeating: "0", count: 64) + "-2a"
        FileManager.default.createFile(atPath: cache + "/objects/00/" + blobName, contents: Data("x".utf8))
        try FileManager.default.createDirectory(atPath: cache + "/objects/00/00", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: cache + "/objects/00/00/" + blobName, contents: Data("x".utf8))
        // Review finding: repair deletes only blob-pattern names and never follows symlinks.
        FileManager.default.createFile(atPath: cache + "/objects/zz-notes.txt", contents: Data("mine".utf8))
        FileManager.default.createFile(atPath: cache + "/objects/00/README", contents: Data("mine".utf8))
        let outside = dir.file("outside")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: outside + "/" + blobName, contents: Data("keep".utf8))
        FileManager.default.createFile(atPath: outside + "/precious", contents: Data("keep".utf8))
        try FileManager.default.createSymbolicLink(atPath: cache + "/objects/01/11", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: cache + "/objects/02/" + blobName, withDestinationPath: outside + "/precious")
        let bad = try await CLI.run(["verify", "--cache-dir", cache, "--json"])
        #expect(bad.status == 1)
        let badReport = try #require(try JSONSerialization.jsonObject(with: Data(bad.stdout.utf8)) as? [String: Any])
        #expect(badReport["orphan_blobs"] as? Int == 2, "\(bad.stdout)")  // a stray blob and a v1-layout one
        #expect(badReport["ignored_files"] as? Int == 4, "\(bad.stdout)")  // two foreign names, two symlinks
        let fixed = try await CLI.run(["verify", "--repair", "--cache-dir", cache])
        #expect(fixed.status == 0, "\(fixed.stdout)")
        let fm = FileManager.default
        #expect(!fm.fileExists(atPath: cache + "/objects/00/" + blobName))
        #expect(fm.fileExists(atPath: cache + "/objects/zz-notes.txt") && fm.fileExists(atPath: cache + "/objects/00/README"))
        #expect(fm.fileExists(atPath: outside + "/" + blobName) && fm.fileExists(atPath: outside + "/precious"))
        #expect((try? fm.destinationOfSymbolicLink(atPath: cache + "/objects/01/11")) == outside)
    }

    @Test func badConfigFailsFastAndTouchesNothing() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        let conf = dir.write("cache.conf", "[cache]\ndirectory = \"\(cache)\"\nmax_size = \"12XB\"\n")
        let result = try await CLI.run(["stats", "--config", conf])
        #expect(result.status == 78)
        #expect(result.stderr.contains(conf))
        #expect(result.stderr.contains("cache.max_size"))
        #expect(result.stderr.contains("12XB"))
        #expect(!result.stderr.contains("Fatal"))
        #expect(result.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: cache))  // nothing created
        // ./cache.conf is picked up from the working directory; env overrides it.
        _ = dir.write("cache.conf", "[cache]\ndirectory = \"\(cache)\"\nmax_size = \"12MB\"\n")
        // `stats` creates no cache (issue 49): made by a command that writes, through ./cache.conf.
        let made = try await CLI.run(["verify", "--repair"], directory: dir.path)
        #expect(made.status == 0 && FileManager.default.fileExists(atPath: cache + "/index.sqlite"), "\(made.stderr)")
        let local = try await CLI.run(["stats", "--json"], environment: ["ARTCACHE_CACHE_MAX_SIZE": "7MB"], directory: dir.path)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(local.stdout.utf8)) as? [String: Any])
        #expect(parsed["max_bytes"] as? Int == 7_000_000)
        #expect(parsed["directory"] as? String == cache)
        let badEnv = try await CLI.run(["stats", "--cache-dir", cache], environment: ["ARTCACHE_CACHE_MAX_SIZE": "huge"])
        #expect(badEnv.status == 78)
        #expect(badEnv.stderr.contains("ARTCACHE_CACHE_MAX_SIZE"))
    }

    @Test func userErrorsAreOneLineOnStderr() async throws {
        let dir = TempDir()
        let noSelector = try await CLI.run(["purge", "--cache-dir", dir.path])
        #expect(noSelector.status != 0)
        #expect(noSelector.stderr.contains("nothing selected"))
        let badDuration = try await CLI.run(["purge", "--older-than", "3 fortnights", "--cache-dir", dir.path])
        #expect(badDuration.status != 0)
        #expect(badDuration.stderr.contains("--older-than"))
        let badURL = try await CLI.run(["purge", "--url", "ftp://x/y", "--cache-dir", dir.path])
        #expect(badURL.status == 1)
        #expect(badURL.stderr.contains("only http and https"))
    }

    @Test func demoRunsOffline() async throws {
        let dir = TempDir()
        let result = try await CLI.run(["demo", "--cache-dir", dir.file("demo")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("repaired"))
        #expect(result.stdout.contains("HTML served as image/jpeg"))
    }

    /// `sign --priority` puts the class into the signed options (`pri=`),
    /// exactly as the library signs it; other values are usage errors.
    @Test func signPriorityIsPartOfTheSignedOptions() async throws {
        let environment = ["ARTCACHE_SERVICE_KEYS": String(repeating: "ab", count: 32)]
        let dir = TempDir()
        let signer = ServiceURLSigner(keys: [[UInt8](repeating: 0xAB, count: 32)])
        for (arguments, options) in [(["--size", "40x40", "--priority", "high"], ThumbnailOptions(size: .init(40), priority: .high)),
                                     (["--priority", "low"], ThumbnailOptions(priority: .low)),
                                     (["--size", "40x40", "--fit", "cover", "--priority", "normal"],
                                      ThumbnailOptions(size: .init(40), fit: .cover, priority: .normal))] {
            let signed = try await CLI.run(["sign", "https://example.com/a.jpg", "--cache-dir", dir.file("c")] + arguments,
                                           environment: environment)
            #expect(signed.status == 0, "\(signed.stderr)")
            let path = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(path == signer.path(for: "https://example.com/a.jpg", options: options), "\(arguments)")
            #expect(path.split(separator: "/")[1].hasSuffix("pri=\(ThumbnailOptions.className(options.priority!))"), "\(path)")
        }
        let bad = try await CLI.run(["sign", "https://example.com/a.jpg", "--priority", "urgent", "--cache-dir", dir.file("c")],
                                    environment: environment)
        #expect(bad.status == 64, "\(bad.status) \(bad.stderr)")
        #expect(bad.stderr.contains("priority") && bad.stdout.isEmpty)
    }
}
