@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// Review findings: every numeric key has a documented range; a value outside
/// it (a huge duration that used to crash on conversion, a zero that used to
/// mean "no limit") is a configuration error naming the key; a relative cache
/// directory means one directory whatever the process's current directory.
@Suite("cache.conf ranges and paths", .timeLimit(.minutes(3)))
struct ConfigRangeTests {
    struct OutOfRange: Sendable, CustomTestStringConvertible {
        let key: String
        let toml: String
        var testDescription: String { "\(key) = \(toml)" }
    }

    static let outOfRange: [OutOfRange] = [
        OutOfRange(key: "download.timeout", toml: "0"),
        OutOfRange(key: "download.timeout", toml: "\"0s\""),
        OutOfRange(key: "download.timeout", toml: "\"1e300d\""),
        OutOfRange(key: "download.timeout", toml: "1e300"),
        OutOfRange(key: "download.connect_timeout", toml: "0"),
        OutOfRange(key: "download.low_speed_limit", toml: "0"),
        OutOfRange(key: "download.low_speed_time", toml: "0"),
        OutOfRange(key: "download.retry_base_delay", toml: "\"99999999999999d\""),
        OutOfRange(key: "download.retry_max_delay", toml: "\"2d\""),
        OutOfRange(key: "download.max_body_size", toml: "\"2GiB\""),
        OutOfRange(key: "cache.access_flush_interval", toml: "\"9999999999999999w\""),
        OutOfRange(key: "cache.max_size", toml: "0"),
        OutOfRange(key: "cache.inline_max", toml: "\"17MiB\""),
        OutOfRange(key: "thumbnails.render_timeout", toml: "0"),
        OutOfRange(key: "service.timeout", toml: "\"0s\""),
        OutOfRange(key: "service.cache_max_age", toml: "\"20000d\""),
    ]

    @Test(arguments: outOfRange)
    func fileValueOutOfRangeNamesTheKey(_ bad: OutOfRange) async throws {
        let parts = bad.key.split(separator: ".")
        let toml = "[\(parts[0])]\n\(parts[1]) = \(bad.toml)\n"
        let error = #expect(throws: ConfigError.self) { try Configuration.parse(toml: toml, source: "test.conf") }
        #expect(error?.code == .invalidValue)
        #expect(error?.key == bad.key)
        let range = try #require(ConfigKey.all.first { $0.path == bad.key }?.kind.rangeText)
        #expect(error?.message.contains(range) == true, "the message states the range: \(error?.message ?? "")")
    }

    @Test func environmentValueOutOfRangeNamesTheVariable() {
        for (variable, text) in [("ARTCACHE_DOWNLOAD_TIMEOUT", "0"), ("ARTCACHE_DOWNLOAD_LOW_SPEED_LIMIT", "0"),
                                 ("ARTCACHE_CACHE_ACCESS_FLUSH_INTERVAL", "1e300w"), ("ARTCACHE_DOWNLOAD_RETRY_BASE_DELAY", "inf")] {
            let error = #expect(throws: ConfigError.self) { try Configuration.read(path: nil, environment: [variable: text]) }
            #expect(error?.key == variable)
            #expect(error?.code == .invalidValue)
        }
    }

    /// A configuration built in code is held to the same ranges.
    @Test func codeBuiltValuesAreChecked() {
        var configuration = Configuration()
        configuration.download.timeout = .infinity
        #expect(throws: ConfigError.self) { try configuration.check() }
        configuration = Configuration()
        configuration.download.lowSpeedLimit = 0
        let error = #expect(throws: ConfigError.self) { try configuration.check() }
        #expect(error?.key == "download.low_speed_limit")
        configuration = Configuration()
        configuration.cache.accessFlushInterval = 1e300
        #expect(throws: ConfigError.self) { try configuration.check() }
        #expect(throws: Never.self) { try Configuration().validate() }
    }

    /// Every numeric key has a range, and cache.conf states it on a `# Range:`
    /// line right above the key.
    @Test func shippedConfigDocumentsEveryRange() async throws {
        let text = try String(contentsOfFile: Fixtures.packageRoot + "/cache.conf", encoding: .utf8)
        var section = ""
        var previous = ""
        var documented: [String: String] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("["), line.hasSuffix("]") { section = String(line.dropFirst().dropLast()) }
            if let equals = line.range(of: " = "), !line.hasPrefix("#") {
                documented["\(section).\(line[..<equals.lowerBound])"] = previous
            }
            previous = line
        }
        let numeric = ConfigKey.all.filter { $0.kind.numericRange != nil }
        #expect(numeric.count > 25)
        for key in numeric {
            #expect(documented[key.path] == "# Range: \(key.kind.rangeText!).", "cache.conf: \(key.path)")
        }
    }

    /// From the environment a relative directory is made absolute once, at
    /// load, against the current directory; from a file, against the file's
    /// directory even when the file was named by a relative path.
    @Test func relativeDirectoryIsMadeAbsoluteAtLoad() async throws {
        let cwd = FileManager.default.currentDirectoryPath
        let fromEnv = try Configuration.read(path: nil, environment: ["ARTCACHE_CACHE_DIRECTORY": "data/./art"])
        #expect(fromEnv.cache.directory == (cwd as NSString).appendingPathComponent("data/art"))
        let dir = TempDir()
        let path = dir.write("cache.conf", "[cache]\ndirectory = \"../store\"\n")
        let fromFile = try Configuration.read(path: path, environment: [:])
        #expect(fromFile.cache.directory == (dir.path as NSString).deletingLastPathComponent + "/store")
        #expect(fromFile.file == path)
    }

    /// Two processes started in different directories with the same
    /// relative `--config` resolve... their own file; with the same file they
    /// open the same cache directory.
    @Test func processesInDifferentDirectoriesShareTheCache() async throws {
        let dir = TempDir()
        let conf = dir.write("cache.conf", "[cache]\ndirectory = \"cache\"\n")
        try FileManager.default.createDirectory(atPath: dir.file("sub"), withIntermediateDirectories: true)
        // `stats` creates no cache (issue 49): a command that writes does.
        let made = try await CLI.run(["verify", "--repair", "--config", conf], directory: dir.path)
        #expect(made.status == 0, "\(made.stderr)")
        let first = try await CLI.run(["stats", "--json", "--config", conf], directory: dir.path)
        let second = try await CLI.run(["stats", "--json", "--config", "../cache.conf"], directory: dir.file("sub"))
        #expect(first.status == 0 && second.status == 0, "\(first.stderr) \(second.stderr)")
        let paths = try [first, second].map { try JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) as? [String: Any] }
            .map { $0?["directory"] as? String }
        #expect(paths[0] == dir.file("cache"))
        #expect(paths[1] == paths[0])
    }
}
