@testable import ArtCacheCore
import ArtCacheOrigin
import Foundation
import Testing

/// Issue 49, item 7: the CLI says what happened. Usage errors, run as the built binary.
@Suite("artcache CLI: usage errors", .timeLimit(.minutes(1)))
struct CLIUsageTests {
    /// Each bad flag exits 64 with its own message (ArgumentParser's
    /// `Error:` line or ours), before any cache is opened or created.
    @Test func badFlagsAreUsageErrors() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        // A port held, not listening: nothing is ever sent to another address.
        let held = try HeldPort()
        let url = held.baseURL + "/a.jpg"
        let list = dir.write("urls.txt", url + "\n")
        let cases: [(arguments: [String], says: [String])] = [
            (["thumb", url, "--size", "0x0"], ["--size 0x0", "at least 1"]),
            (["thumb", url, "--size", "99999x1"], ["--size 99999x1", "thumbnails.max_output (4096)"]),
            (["thumb", url, "--size", "5000x10"], ["--size 5000x10", "thumbnails.max_output (4096)"]),
            (["thumb", url, "--size", "100x100", "--quality", "0"], ["--quality 0", "from 1 to 100"]),
            (["serve", "--listen", "127.0.0.1:99999"], ["--listen 127.0.0.1:99999", "port 99999"]),
            (["prefetch", list, "--concurrency", "100000"], ["--concurrency 100000", "from 1 to 1024"]),
            (["prefetch", list, "--concurrency", "0"], ["--concurrency 0", "from 1 to 1024"]),
            (["help", "no-such-command"], ["no such command 'no-such-command'", "stats"]),
            (["help", "purge", "nope"], ["no such command 'purge nope'"]),
        ]
        for (arguments, says) in cases {
            let result = try await CLI.run(arguments + ["--cache-dir", cache],
                                           environment: ["ARTCACHE_SERVICE_KEYS": String(repeating: "ab", count: 32)])
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.stderr)")
            for text in says { #expect(result.stderr.contains(text), "\(arguments): \(result.stderr)") }
            #expect(!result.stderr.contains("configuration error"), "\(arguments): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: cache), "\(arguments) touched no cache")
        }
        // A size within the configured limit is no usage error; help on a real command is help.
        let raised = try await CLI.run(["thumb", url, "--size", "5000x10", "--cache-dir", cache],
                                       environment: ["ARTCACHE_THUMBNAILS_MAX_OUTPUT": "8192", "ARTCACHE_DOWNLOAD_RETRIES": "0"])
        #expect(raised.status == 1 && !raised.stderr.contains("max_output"), "\(raised.status) \(raised.stderr)")
        let help = try await CLI.run(["help", "purge"])
        #expect(help.status == 0 && help.stdout.contains("--dry-run"), "\(help.stderr)")
        withExtendedLifetime(held) {}
    }

    /// Issue 59: `purge`'s, `sign`'s and `health --url`'s usage errors
    /// exit 64 (they exited 1; health said "unhealthy"), each in its own
    /// words, and open or create no cache.
    @Test func purgeAndSignUsageErrorsExit64BeforeAnyCache() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        let cases: [(arguments: [String], says: String)] = [
            (["purge", "--older-than", "3x"], "--older-than: invalid duration \"3x\""),
            (["purge", "--to-size", "bogus"], "--to-size: invalid size \"bogus\""),
            (["purge"], "nothing selected: give --all"),
            (["purge", "--tier2"], "--tier2 needs --older-than"),
            (["purge", "--tier2", "--older-than", "30d", "--all"], "--tier2 takes --older-than, --dry-run and --json only"),
            (["sign", "http://127.0.0.1:9/a.jpg", "--fit", "bogus"], "fit must be one of contain, cover, smart"),
            (["health", "--url", "127.0.0.1:31100"], "health --url takes an http:// URL of the service"),
        ]
        for (arguments, says) in cases {
            let result = try await CLI.run(arguments + ["--cache-dir", cache],
                                           environment: ["ARTCACHE_SERVICE_KEYS": String(repeating: "ab", count: 32)])
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains(says), "\(arguments): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: cache), "\(arguments) touched no cache")
            #expect(!result.stderr.contains("unhealthy"), "\(arguments): \(result.stderr)")
        }
        // `--tier2` with no tier configured: the configuration's fault (78), and no cache either.
        for arguments in [["stats", "--tier2"], ["purge", "--tier2", "--older-than", "30d"]] {
            let result = try await CLI.run(arguments + ["--cache-dir", cache])
            #expect(result.status == 78, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("configuration error") && result.stderr.contains("tier2.endpoint"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: cache), "\(arguments) touched no cache")
        }
    }
}
