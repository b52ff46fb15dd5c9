@testable import ArtCacheCore
import Foundation
import Testing

/// Issue 49, item 7: the CLI touches nothing it was not asked to. The
/// read-only commands, run as the built binary.
@Suite("artcache CLI: read-only commands", .timeLimit(.minutes(1)))
struct CLIReadOnlyTests {
    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    /// `stats`, `verify`, `purge --dry-run` and `manifest` on a folder with
    /// no cache: exit 1, `no cache at DIR`, and still no cache there.
    @Test func readOnlyCommandsNeverCreateACache() async throws {
        let dir = TempDir()
        let list = dir.write("urls.txt", "http://127.0.0.1:9/a.jpg\n")
        let empty = dir.file("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        for cache in [dir.file("absent"), empty] {
            for arguments in [["stats"], ["stats", "--json"], ["verify"], ["verify", "--hash"], ["purge", "--all", "--dry-run"],
                              ["manifest", list]] {
                let result = try await CLI.run(arguments + ["--cache-dir", cache])
                #expect(result.status == 1, "\(arguments): \(result.status) \(result.stderr)")
                #expect(result.stderr.contains("no cache at \(cache)"), "\(arguments): \(result.stderr)")
                #expect(result.stdout.isEmpty, "\(arguments): \(result.stdout)")
            }
            #expect(cache == empty ? (try FileManager.default.contentsOfDirectory(atPath: cache)).isEmpty
                                   : !FileManager.default.fileExists(atPath: cache), "nothing created in \(cache)")
        }
        // The commands that write do create one.
        let made = try await CLI.run(["verify", "--repair", "--cache-dir", dir.file("absent")])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.file("absent") + "/index.sqlite"))
    }

    /// A configured `mode` is applied when a cache is created and by
    /// `verify --repair`, never by `stats` (nor the other read-only commands).
    @Test func onlyWritingCommandsApplyTheConfiguredMode() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        let write = try await CLI.run(["--cache-dir", cache, "--count", "2"], executable: CLI.stress)
        #expect(write.status == 0, "\(write.stderr)")
        #expect(Self.mode(cache) == 0o700 && Self.mode(cache + "/index.sqlite") == 0o600)
        let conf = dir.write("open.conf", "[cache]\ndirectory = \"\(cache)\"\nmode = \"0777\"\n")
        let list = dir.write("urls.txt", "http://127.0.0.1:9/a.jpg\n")
        for arguments in [["stats"], ["verify"], ["purge", "--all", "--dry-run"], ["manifest", list]] {
            let result = try await CLI.run(["--config", conf] + arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(Self.mode(cache) == 0o700, "\(arguments): \(String(Self.mode(cache), radix: 8))")
            for file in ["/index.sqlite", "/lock", "/objects", "/objects/00", "/tmp"] {
                let expected: mode_t = file.hasPrefix("/objects") || file == "/tmp" ? 0o700 : 0o600
                #expect(Self.mode(cache + file) == expected, "\(arguments): \(file) \(String(Self.mode(cache + file), radix: 8))")
            }
        }
        let repair = try await CLI.run(["--config", conf, "verify", "--repair"])
        #expect(repair.status == 0, "\(repair.stderr)")
        #expect(Self.mode(cache) == 0o777 && Self.mode(cache + "/index.sqlite") == 0o666)
        #expect(Self.mode(cache + "/objects/00") == 0o777)
    }
}
