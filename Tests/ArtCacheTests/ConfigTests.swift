@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

@Suite("cache.conf parsing")
struct ConfigTests {
    @Test func defaultsWithoutFile() throws {
        let config = try Configuration.read(path: nil, environment: [:])
        #expect(config.cache.maxBytes == 2_000_000_000)
        #expect(config.cache.maxEntries == 1_000_000)
        #expect(config.cache.maxAge == 30 * 86400)
        #expect(config.download.concurrency == 32)
        #expect(config.file == nil)
    }

    @Test func fileValuesAndUnits() throws {
        let dir = TempDir()
        let path = dir.write("cache.conf", """
            [cache]
            directory = "data"
            max_size = "2GiB"
            max_entries = 500
            max_age = "12h"
            low_water = 0.5
            [download]
            max_body_size = 1048576
            allow_http = false
            timeout = 90
            """)
        let config = try Configuration.read(path: path, environment: [:])
        #expect(config.cache.directory == dir.path + "/data")  // relative to the file
        #expect(config.cache.maxBytes == 2 * 1_073_741_824)
        #expect(config.cache.maxEntries == 500)
        #expect(config.cache.maxAge == 12 * 3600)
        #expect(config.cache.lowWater == 0.5)
        #expect(config.download.maxBodyBytes == 1_048_576)
        #expect(config.download.allowHTTP == false)
        #expect(config.download.timeout == 90)
    }

    @Test func environmentOverridesFile() throws {
        let dir = TempDir()
        let path = dir.write("cache.conf", "[cache]\nmax_size = \"1GB\"\nmax_entries = 10\n")
        let config = try Configuration.read(path: path, environment: [
            "ARTCACHE_CACHE_MAX_SIZE": "500MB", "ARTCACHE_DOWNLOAD_PER_HOST": "3", "ARTCACHE_CONFIG": "/ignored",
        ])
        #expect(config.cache.maxBytes == 500_000_000)
        #expect(config.cache.maxEntries == 10)
        #expect(config.download.perHost == 3)
    }

    /// `--config`, then `$ARTCACHE_CONFIG`, then `./cache.conf`, then the
    /// user's config directory, then the system's (`/etc/artcache/cache.conf`,
    /// here a file of the test's): a `cache.conf` in whatever directory
    /// artcache starts in must not beat the variable.
    @Test func locateOrder() throws {
        let dir = TempDir()
        let home = TempDir()
        let env = ["HOME": home.path]
        let system = TempDir()
        let systemPath = system.file("cache.conf")
        func locate(_ explicitPath: String?, _ env: [String: String], _ cwd: String) -> String? {
            Configuration.locate(explicitPath: explicitPath, environment: env, currentDirectory: cwd, systemPath: systemPath)
        }
        #expect(locate("/x.conf", env.merging(["ARTCACHE_CONFIG": "/y.conf"]) { $1 }, dir.path) == "/x.conf")
        #expect(locate(nil, env.merging(["ARTCACHE_CONFIG": "/y.conf"]) { $1 }, dir.path) == "/y.conf")
        #expect(locate(nil, env, dir.path) == nil)
        _ = dir.write("cache.conf", "")
        #expect(locate(nil, env.merging(["ARTCACHE_CONFIG": "/y.conf"]) { $1 }, dir.path) == "/y.conf")
        #expect(locate(nil, env, dir.path) == dir.file("cache.conf"))
        // Then the user's config directory: XDG_CONFIG_HOME, else ~/.config.
        let other = TempDir()
        try FileManager.default.createDirectory(atPath: home.path + "/.config/artcache", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: home.path + "/.config/artcache/cache.conf", contents: Data())
        #expect(locate(nil, env, other.path) == home.path + "/.config/artcache/cache.conf")
        #expect(locate(nil, env, dir.path) == dir.file("cache.conf"))
        #expect(locate(nil, env.merging(["XDG_CONFIG_HOME": other.path]) { $1 }, other.path) == nil)
        // The system's file is the last place: found only when none above exists.
        _ = system.write("cache.conf", "")
        #expect(locate(nil, env.merging(["XDG_CONFIG_HOME": other.path]) { $1 }, other.path) == systemPath)
        #expect(locate(nil, env, other.path) == home.path + "/.config/artcache/cache.conf")
        #expect(locate(nil, env, dir.path) == dir.file("cache.conf"))
        #expect(Configuration.lookupOrder.hasSuffix("else /etc/artcache/cache.conf; the first that exists, or the built-in defaults when none does"))
        // Relative paths come back absolute, against the given directory.
        #expect(locate("conf/../a.conf", env, dir.path) == dir.path + "/a.conf")
        #expect(locate(nil, env.merging(["ARTCACHE_CONFIG": "b.conf"]) { $1 }, dir.path) == dir.path + "/b.conf")
    }

    struct BadCase: Sendable, CustomTestStringConvertible {
        let toml: String
        let code: ConfigError.Code
        let key: String?
        let mentions: String
        var testDescription: String { "\(code.rawValue): \(toml.replacingOccurrences(of: "\n", with: " "))" }
    }

    static let badCases: [BadCase] = [
        BadCase(toml: "[cache]\nmax_sise = \"1GB\"", code: .unknownKey, key: "cache.max_sise", mentions: "unknown key"),
        BadCase(toml: "[cahce]\nmax_size = \"1GB\"", code: .unknownSection, key: "cahce", mentions: "unknown section"),
        BadCase(toml: "[cache]\nmax_size = true", code: .wrongType, key: "cache.max_size", mentions: "found bool"),
        BadCase(toml: "[cache]\nmax_entries = \"many\"", code: .wrongType, key: "cache.max_entries", mentions: "integer"),
        BadCase(toml: "[cache]\nmax_entries = 2.5", code: .wrongType, key: "cache.max_entries", mentions: "integer"),
        BadCase(toml: "[cache]\nmax_size = -5", code: .invalidValue, key: "cache.max_size", mentions: "negative"),
        BadCase(toml: "[cache]\nmax_size = \"-5MB\"", code: .invalidValue, key: "cache.max_size", mentions: "negative"),
        BadCase(toml: "[cache]\nmax_size = \"12XB\"", code: .invalidValue, key: "cache.max_size", mentions: "\"12XB\""),
        BadCase(toml: "[cache]\nmax_age = \"3 fortnights\"", code: .invalidValue, key: "cache.max_age", mentions: "duration"),
        BadCase(toml: "[cache]\nlow_water = 1.5", code: .invalidValue, key: "cache.low_water", mentions: "at most 1"),
        BadCase(toml: "[cache]\nmax_entries = 0", code: .invalidValue, key: "cache.max_entries", mentions: "from 1"),
        BadCase(toml: "[cache]\ndirectory = 5", code: .wrongType, key: "cache.directory", mentions: "string"),
        BadCase(toml: "[download]\nallow_http = \"yes\"", code: .wrongType, key: "download.allow_http", mentions: "true or false"),
        BadCase(toml: "[cache]\nmax_size = \"1GB\"\nmax_size = \"2GB\"", code: .syntax, key: nil, mentions: "line"),
        BadCase(toml: "[cache\nmax_size = 1", code: .syntax, key: nil, mentions: "line"),
        BadCase(toml: "cache = 5", code: .wrongType, key: "cache", mentions: "table"),
        BadCase(toml: "[cache]\nsync = \"never\"", code: .invalidValue, key: "cache.sync", mentions: "filesystem, files"),
    ]

    @Test(arguments: badCases)
    func badFileFailsNamingFileAndKey(_ bad: BadCase) throws {
        let dir = TempDir()
        let path = dir.write("bad.conf", bad.toml)
        let error = #expect(throws: ConfigError.self) { try Configuration.read(path: path, environment: [:]) }
        #expect(error?.code == bad.code)
        #expect(error?.key == bad.key)
        #expect(error?.source == path)
        #expect(error?.description.contains(path) == true)
        #expect(error?.description.contains(bad.mentions) == true, "\(error?.description ?? "")")
    }

    /// Issue 59: a value the environment set that fails a rule is blamed
    /// on its variable, not on the file beside it (which has no such key).
    @Test func anEnvironmentValueIsBlamedOnItsVariable() {
        let dir = TempDir()
        let path = dir.write("cache.conf", "[cache]\nmax_size = \"1GB\"\n")
        let error = #expect(throws: ConfigError.self) {
            try Configuration.read(path: path, environment: ["ARTCACHE_SERVICE_KEYS": "abc"])
        }
        #expect(error?.source == "environment" && error?.key == "service.keys", "\(error?.description ?? "")")
        #expect(error?.description.contains(path) == false, "\(error?.description ?? "")")
        // The same rule broken in the file still names the file and its key.
        let inFile = dir.write("keys.conf", "[service]\nkeys = [\"abc\"]\n")
        let fileError = #expect(throws: ConfigError.self) { try Configuration.read(path: inFile, environment: [:]) }
        #expect(fileError?.source == inFile && fileError?.key == "service.keys", "\(fileError?.description ?? "")")
    }

    @Test func missingFile() {
        let error = #expect(throws: ConfigError.self) { try Configuration.read(path: "/nonexistent/cache.conf", environment: [:]) }
        #expect(error?.code == .fileNotFound)
    }

    @Test func badEnvironment() {
        let unknown = #expect(throws: ConfigError.self) {
            try Configuration.read(path: nil, environment: ["ARTCACHE_CACHE_MAXSIZE": "1GB"])
        }
        #expect(unknown?.code == .unknownKey)
        #expect(unknown?.key == "ARTCACHE_CACHE_MAXSIZE")
        let invalid = #expect(throws: ConfigError.self) {
            try Configuration.read(path: nil, environment: ["ARTCACHE_DOWNLOAD_CONCURRENCY": "lots"])
        }
        #expect(invalid?.code == .invalidValue)
        #expect(invalid?.source == "environment")
    }

    @Test func unitParsing() {
        #expect(Units.parseSize("500MB") == 500_000_000)
        #expect(Units.parseSize("2GiB") == 2_147_483_648)
        #expect(Units.parseSize("1.5 kB") == 1500)
        #expect(Units.parseSize("1024") == 1024)
        #expect(Units.parseSize("12XB") == nil)
        #expect(Units.parseSize("-1MB") == nil)
        #expect(Units.parseSize("") == nil)
        #expect(Units.parseDuration("30d") == 2_592_000.0)
        #expect(Units.parseDuration("12h") == 43200)
        #expect(Units.parseDuration("90m") == 5400)
        #expect(Units.parseDuration("0.5s") == 0.5)
        #expect(Units.parseDuration("2w") == 1_209_600)
        #expect(Units.parseDuration("soon") == nil)
    }

    /// The shipped cache.conf parses, and documents every key with its default.
    @Test func shippedConfigDocumentsEveryKey() throws {
        let path = Fixtures.packageRoot + "/cache.conf"
        let values = try Configuration.parse(toml: String(contentsOfFile: path, encoding: .utf8), source: path)
        for key in ConfigKey.all {
            #expect(values[key.path] == key.defaultValue, "cache.conf must set \(key.path) to its default")
        }
    }
}
