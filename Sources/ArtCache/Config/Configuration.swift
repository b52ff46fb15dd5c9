import Foundation
import TOMLKit

/// A configuration problem: names the file (or variable), the key and what was wrong.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case fileNotFound = "file_not_found"
        case unreadable
        case syntax
        case unknownSection = "unknown_section"
        case unknownKey = "unknown_key"
        case wrongType = "wrong_type"
        case invalidValue = "invalid_value"
    }

    public let code: Code
    /// The file or environment variable the problem came from.
    public let source: String
    /// `section.key`, when the problem is about one key.
    public let key: String?
    public let message: String

    public var description: String {
        if let key { return "\(source): \(key): \(message)" }
        return "\(source): \(message)"
    }
}

/// `[cache]`: where the cache lives and how big it may grow.
public struct CacheSettings: Sendable, Equatable {
    public var directory: String
    public var maxBytes: Int64
    public var maxEntries: Int
    /// Entries not accessed for this long are evicted; 0 disables age eviction.
    public var maxAge: TimeInterval
    /// After an eviction the cache is at most this fraction of its limits.
    public var lowWater: Double
    public var accessFlushInterval: TimeInterval
    public var accessFlushBatch: Int
    /// Blobs of at most this many bytes live inside the SQLite database;
    /// larger ones are files under `objects/`. 0: every blob is a file.
    public var inlineMax: Int64 = 65_536
    /// Most puts committed in one transaction (group commit).
    public var writeBatchMax: Int = 256
    /// Permission bits of the folders artcache creates (`[cache] mode`);
    /// files get the same bits without execute. Default 0o700: owner only.
    public var mode: Int = 0o700
}

extension CacheSettings {
    /// The documented defaults of `cache.conf`; set the fields to change them.
    public init() { self = Configuration.defaults.cache }
}

/// `[download]`: how the downloader talks to origins.
public struct DownloadSettings: Sendable, Equatable {
    public var concurrency: Int
    public var perHost: Int
    public var connectTimeout: TimeInterval
    public var timeout: TimeInterval
    public var lowSpeedLimit: Int64
    public var lowSpeedTime: TimeInterval
    public var maxRedirects: Int
    public var maxBodyBytes: Int64
    public var userAgent: String
    public var allowHTTP: Bool
    public var retries: Int
    public var retryBaseDelay: TimeInterval
    public var retryMaxDelay: TimeInterval
    /// URLs kept in the persistent retry queue; the oldest failures go first.
    public var retryQueueMax: Int
    /// Transfers that may wait for one host; more fail at once (`queue_full`).
    public var queuePerHost: Int = 10_000
    /// Network failures (DNS, connect) in a row after which a host counts as
    /// offline for this run: its other URLs go straight to the retry queue
    /// (`host_offline`) until the breaker's cool-down lets one try again.
    public var offlineAfter: Int = 3
    /// How long an offline host's URLs are not tried; then one goes through
    /// (and its answer closes the breaker, its failure reopens it).
    public var offlineRetryAfter: TimeInterval = 30
    /// Non-public networks origins may be fetched from anyway (CIDR), e.g.
    /// `127.0.0.1/32` for a local origin. Everything else that is not a public
    /// address is refused at connect time (`blocked_address`).
    public var allowedNetworks: [IPNetwork] = []
    /// Hosts sources may come from (`example.com`, `*.example.com`); empty:
    /// any public host. Checked on the URL and on every redirect hop.
    public var allowedSources: [HostPattern] = []

    /// Where connections may go under these settings.
    public var addressPolicy: AddressPolicy { AddressPolicy(allowedNetworks: allowedNetworks) }
    /// Which hosts sources may come from under these settings.
    public var sourcePolicy: SourcePolicy { SourcePolicy(patterns: allowedSources) }
}

extension DownloadSettings {
    /// The documented defaults of `cache.conf`; set the fields to change them.
    public init() { self = Configuration.defaults.download }
}

/// `[memory]`: the in-process tier of encoded images in front of the disk
/// cache (least recently used first out; both limits strict; 0 turns it off).
public struct MemorySettings: Sendable, Equatable {
    public var maxBytes: Int64
    public var maxEntries: Int

    /// Every value defaults to the documented default of `cache.conf`.
    public init(maxBytes: Int64 = Configuration.defaults.memory.maxBytes,
                maxEntries: Int = Configuration.defaults.memory.maxEntries) {
        self.maxBytes = maxBytes
        self.maxEntries = maxEntries
    }
}

/// The whole configuration: defaults, overridden by `cache.conf`, overridden by
/// `ARTCACHE_<SECTION>_<KEY>` environment variables (CLI flags override those).
public struct Configuration: Sendable, Equatable {
    public var cache: CacheSettings
    public var download: DownloadSettings
    public var thumbnails: ThumbnailSettings
    public var memory: MemorySettings
    public var service: ServiceSettings
    /// `[presets]`: named thumbnail options (`avatar = "100x100,fit=cover"`),
    /// used in service URLs as `p=avatar`.
    public var presets: [String: ThumbnailOptions]
    /// The file the configuration was read from, if any.
    public var file: String?

    /// Built-in defaults, no file, no environment.
    public static let defaults: Configuration = {
        do {
            return try Configuration(values: [:], file: nil)
        } catch {
            fatalError("the built-in defaults are invalid: \(error)")  // a bug in ConfigKey.all, caught by the tests
        }
    }()

    /// A configuration in code, without a file: each section defaults to the
    /// documented defaults of `cache.conf`.
    public init(cache: CacheSettings = CacheSettings(), download: DownloadSettings = DownloadSettings(),
                thumbnails: ThumbnailSettings = ThumbnailSettings(), memory: MemorySettings = MemorySettings(),
                service: ServiceSettings = ServiceSettings(), presets: [String: ThumbnailOptions] = [:]) {
        self.cache = cache
        self.download = download
        self.thumbnails = thumbnails
        self.memory = memory
        self.service = service
        self.presets = presets
        self.file = nil
    }

    /// Picks the file the way the CLI does: `explicitPath` (`--config`), else
    /// `$ARTCACHE_CONFIG`, else `./cache.conf` when it exists, else
    /// `$XDG_CONFIG_HOME/artcache/cache.conf` (`~/.config/artcache/cache.conf`)
    /// when it exists, else nil (built-in defaults). The path returned is absolute.
    public static func locate(explicitPath: String?, environment: [String: String],
                              currentDirectory: String = FileManager.default.currentDirectoryPath) -> String? {
        func absolute(_ path: String) -> String {
            let expanded = expandTilde(path, environment: environment)
            let full = expanded.hasPrefix("/") ? expanded : (currentDirectory as NSString).appendingPathComponent(expanded)
            return (full as NSString).standardizingPath
        }
        if let explicitPath { return absolute(explicitPath) }
        if let fromEnv = environment["ARTCACHE_CONFIG"], !fromEnv.isEmpty { return absolute(fromEnv) }
        let local = absolute("cache.conf")
        if FileManager.default.fileExists(atPath: local) { return local }
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        let user = (configHome as NSString).appendingPathComponent("artcache/cache.conf")
        if FileManager.default.fileExists(atPath: user) { return user }
        return nil
    }

    /// Loads `path` (nil: defaults only) and applies environment overrides.
    public static func load(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> Configuration {
        var values: [String: ConfigValue] = [:]
        // Absolute from here on, so a relative cache directory in the file
        // means the same directory whichever directory a process runs in.
        let path = path.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        if let path {
            let text: String
            guard FileManager.default.fileExists(atPath: path) else {
                throw ConfigError(code: .fileNotFound, source: path, key: nil, message: "configuration file not found")
            }
            do {
                text = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ConfigError(code: .unreadable, source: path, key: nil, message: "cannot read: \(error.localizedDescription)")
            }
            values = try parse(toml: text, source: path)
        }
        try applyEnvironment(environment, to: &values)
        return try Configuration(values: values, file: path)
    }

    /// Parses TOML text into checked values (every key known, every value of its type).
    static func parse(toml text: String, source: String) throws(ConfigError) -> [String: ConfigValue] {
        try checkTableHeaders(text, source: source)
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigError(code: .syntax, source: source, key: nil,
                              message: "TOML syntax error at line \(error.source.begin.line), column \(error.source.begin.column): \(error.description)")
        } catch {
            throw ConfigError(code: .syntax, source: source, key: nil, message: "TOML syntax error: \(error)")
        }
        var values: [String: ConfigValue] = [:]
        for (sectionName, sectionValue) in table {
            guard ConfigKey.sections.contains(sectionName) else {
                throw ConfigError(code: .unknownSection, source: source, key: sectionName,
                                  message: "unknown section [\(sectionName)] (known: \(ConfigKey.sections.joined(separator: ", ")))")
            }
            guard let section = sectionValue.table else {
                throw ConfigError(code: .wrongType, source: source, key: sectionName,
                                  message: "expected a [\(sectionName)] table, found \(sectionValue.type)")
            }
            if sectionName == ConfigKey.presetsSection {
                for (name, value) in section {
                    guard let text = value.string else {
                        throw ConfigError(code: .wrongType, source: source, key: "presets.\(name)",
                                          message: "expected an options string like \"100x100,fit=cover\", found \(value.type)")
                    }
                    values["presets.\(name)"] = .string(text)
                }
                continue
            }
            for (name, value) in section {
                guard let key = ConfigKey.lookup(section: sectionName, name: name) else {
                    let known = ConfigKey.all.filter { $0.section == sectionName }.map(\.name)
                    throw ConfigError(code: .unknownKey, source: source, key: "\(sectionName).\(name)",
                                      message: "unknown key (known in [\(sectionName)]: \(known.joined(separator: ", ")))")
                }
                values[key.path] = try convert(value, key: key, source: source)
            }
        }
        return values
    }

    /// toml++ (under TOMLKit) aborts the process on a table header whose
    /// name starts with anything but a bare-key character or a quote (`[.]`,
    /// `[~]`, `[ #]`): such headers are a syntax error here, before it sees them.
    static func checkTableHeaders(_ text: String, source: String) throws(ConfigError) {
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            var rest = line.drop { $0 == " " || $0 == "\t" }
            guard rest.hasPrefix("[") else { continue }
            rest = rest.dropFirst()
            if rest.hasPrefix("[") { rest = rest.dropFirst() }
            rest = rest.drop { $0 == " " || $0 == "\t" }
            let ok = rest.first.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "\"" || $0 == "'") } ?? false
            guard ok else {
                throw ConfigError(code: .syntax, source: source, key: nil,
                                  message: "TOML syntax error at line \(index + 1): a table name must start with a letter, digit, _, - or a quote")
            }
        }
    }

    private static func convert(_ value: TOMLValueConvertible, key: ConfigKey, source: String) throws(ConfigError) -> ConfigValue {
        func wrongType() -> ConfigError {
            ConfigError(code: .wrongType, source: source, key: key.path,
                        message: "expected \(key.kind.typeName), found \(value.type)")
        }
        func invalid(_ shown: String) -> ConfigError {
            ConfigError(code: .invalidValue, source: source, key: key.path,
                        message: "invalid value \(shown): expected \(key.kind.typeName)")
        }
        switch key.kind {
        case .string:
            guard let string = value.string else { throw wrongType() }
            return .string(string)
        case .choice, .color:
            guard let string = value.string else { throw wrongType() }
            guard let parsed = key.kind.parse(text: string) else { throw invalid("\"\(string)\"") }
            return parsed
        case .bool:
            guard let bool = value.bool else { throw wrongType() }
            return .bool(bool)
        case .list:
            guard let array = value.array else { throw wrongType() }
            var items: [String] = []
            for element in array {
                guard let string = element.string else { throw wrongType() }
                items.append(string)
            }
            return .list(items)
        case .size, .duration, .integer, .ratio:
            if let string = value.string {
                if case .integer = key.kind { throw wrongType() }
                if case .ratio = key.kind { throw wrongType() }
                guard let parsed = key.kind.parse(text: string) else {
                    if string.trimmingCharacters(in: .whitespaces).hasPrefix("-") {
                        throw ConfigError(code: .invalidValue, source: source, key: key.path,
                                          message: "invalid value \"\(string)\": must not be negative")
                    }
                    throw invalid("\"\(string)\"")
                }
                return parsed
            }
            let number: Double
            if let int = value.int { number = Double(int) } else if let double = value.double { number = double } else { throw wrongType() }
            if case .integer = key.kind, value.int == nil { throw wrongType() }
            guard number >= 0 else {
                throw ConfigError(code: .invalidValue, source: source, key: key.path,
                                  message: "invalid value \(value.int.map { String($0) } ?? String(number)): must not be negative")
            }
            guard let parsed = key.kind.parse(number: number) else {
                throw invalid(value.int.map { String($0) } ?? String(number))
            }
            return parsed
        }
    }

    static func applyEnvironment(_ environment: [String: String], to values: inout [String: ConfigValue]) throws(ConfigError) {
        let prefixes = ConfigKey.sections.map { "ARTCACHE_\($0.uppercased())_" }
        for (variable, text) in environment.sorted(by: { $0.key < $1.key }) where prefixes.contains(where: variable.hasPrefix) {
            if variable.hasPrefix("ARTCACHE_PRESETS_") {
                values["presets.\(variable.dropFirst("ARTCACHE_PRESETS_".count).lowercased())"] = .string(text)
                continue
            }
            guard let key = ConfigKey.all.first(where: { $0.environmentName == variable }) else {
                throw ConfigError(code: .unknownKey, source: "environment", key: variable,
                                  message: "unknown setting (variables are ARTCACHE_<SECTION>_<KEY> for keys of cache.conf)")
            }
            guard let value = key.kind.parse(text: text) else {
                throw ConfigError(code: .invalidValue, source: "environment", key: variable,
                                  message: "invalid value \"\(text)\": expected \(key.kind.typeName)")
            }
            values[key.path] = value
        }
    }

    init(values: [String: ConfigValue], file: String?) throws(ConfigError) {
        func value(_ path: String) -> ConfigValue {
            values[path] ?? ConfigKey.all.first { $0.path == path }!.defaultValue
        }
        func string(_ p: String) -> String { if case .string(let v) = value(p) { v } else { "" } }
        func size(_ p: String) -> Int64 { if case .size(let v) = value(p) { v } else { 0 } }
        func duration(_ p: String) -> TimeInterval { if case .duration(let v) = value(p) { v } else { 0 } }
        func integer(_ p: String) -> Int { if case .integer(let v) = value(p) { v } else { 0 } }
        func ratio(_ p: String) -> Double { if case .ratio(let v) = value(p) { v } else { 1 } }
        func bool(_ p: String) -> Bool { if case .bool(let v) = value(p) { v } else { false } }
        func list(_ p: String) -> [String] { if case .list(let v) = value(p) { v } else { [] } }

        var directory = Configuration.expandTilde(string("cache.directory"))
        if !directory.isEmpty {
            // A relative directory in a file is relative to that file; from the
            // environment, to the directory the process started in. Either way
            // it is made absolute once, here.
            let base = file.map { ($0 as NSString).deletingLastPathComponent }
            directory = Configuration.absolutePath(directory, relativeTo: base)
        }
        cache = CacheSettings(
            directory: directory,
            maxBytes: size("cache.max_size"),
            maxEntries: integer("cache.max_entries"),
            maxAge: duration("cache.max_age"),
            lowWater: ratio("cache.low_water"),
            accessFlushInterval: duration("cache.access_flush_interval"),
            accessFlushBatch: integer("cache.access_flush_batch"),
            inlineMax: size("cache.inline_max"),
            writeBatchMax: integer("cache.write_batch_max"))
        let modeText = string("cache.mode")
        guard let mode = CacheSettings.parseMode(modeText) else {
            throw ConfigError(code: .invalidValue, source: file ?? "environment", key: "cache.mode",
                              message: "invalid value \"\(modeText)\": expected octal permissions from 0700 to 0777 (the owner keeps rwx)")
        }
        cache.mode = mode
        download = DownloadSettings(
            concurrency: integer("download.concurrency"),
            perHost: integer("download.per_host"),
            connectTimeout: duration("download.connect_timeout"),
            timeout: duration("download.timeout"),
            lowSpeedLimit: size("download.low_speed_limit"),
            lowSpeedTime: duration("download.low_speed_time"),
            maxRedirects: integer("download.max_redirects"),
            maxBodyBytes: size("download.max_body_size"),
            userAgent: string("download.user_agent"),
            allowHTTP: bool("download.allow_http"),
            retries: integer("download.retries"),
            retryBaseDelay: duration("download.retry_base_delay"),
            retryMaxDelay: duration("download.retry_max_delay"),
            retryQueueMax: integer("download.retry_queue_max"),
            queuePerHost: integer("download.queue_per_host"),
            offlineAfter: integer("download.offline_after"),
            offlineRetryAfter: duration("download.offline_retry_after"))
        let source = file ?? "environment"
        for text in list("download.allowed_networks") {
            guard let network = IPNetwork(text.trimmingCharacters(in: .whitespaces)) else {
                throw ConfigError(code: .invalidValue, source: source, key: "download.allowed_networks",
                                  message: "invalid network \"\(text)\": expected CIDR like 127.0.0.1/32 or fd00::/8")
            }
            download.allowedNetworks.append(network)
        }
        for text in list("download.allowed_sources") {
            guard let pattern = HostPattern(text) else {
                throw ConfigError(code: .invalidValue, source: source, key: "download.allowed_sources",
                                  message: "invalid host pattern \"\(text)\": expected example.com, *.example.com or *")
            }
            download.allowedSources.append(pattern)
        }
        var sizes: [VariantSpec] = []
        let fit = VariantSpec.Fit(rawValue: string("thumbnails.fit")) ?? .contain
        let format = VariantSpec.Format(rawValue: string("thumbnails.format")) ?? .auto
        let background = ThumbnailSettings.parseColor(string("thumbnails.background")) ?? [255, 255, 255]
        for text in list("thumbnails.sizes") {
            guard let spec = VariantSpec(size: text, fit: fit, format: format, quality: integer("thumbnails.quality"),
                                         background: background) else {
                throw ConfigError(code: .invalidValue, source: source, key: "thumbnails.sizes",
                                  message: "invalid size \"\(text)\": expected WIDTHxHEIGHT like 100x100")
            }
            sizes.append(spec)
        }
        thumbnails = ThumbnailSettings(
            sizes: sizes, format: format, quality: integer("thumbnails.quality"), fit: fit, background: background,
            maxSourcePixels: integer("thumbnails.max_source_pixels"), maxFrames: integer("thumbnails.max_frames"),
            maxOutput: integer("thumbnails.max_output"), allowSVG: bool("thumbnails.allow_svg"),
            allowMagick: bool("thumbnails.allow_magick"), concurrency: integer("thumbnails.concurrency"),
            placeholder: Configuration.expandTilde(string("thumbnails.placeholder")),
            renderTimeout: duration("thumbnails.render_timeout"))
        memory = MemorySettings(maxBytes: size("memory.max_size"), maxEntries: integer("memory.max_entries"))
        service = try Configuration.service(string: string, list: list, integer: integer, duration: duration, bool: bool,
                                            source: source)
        presets = try Configuration.presets(values: values, source: source)
        self.file = file
        try validate()
    }

    /// Checks the rules that span keys or that a configuration built in code
    /// may break (ranges the file parser enforces per key). Throws a
    /// `ConfigError` naming the key.
    public func validate() throws(ConfigError) {
        let source = file ?? "environment"
        func fail(_ key: String, _ message: String) -> ConfigError {
            ConfigError(code: .invalidValue, source: source, key: key, message: message)
        }
        try validateRanges(source: source)
        for spec in thumbnails.sizes where spec.width > thumbnails.maxOutput || spec.height > thumbnails.maxOutput {
            throw fail("thumbnails.sizes", "\(spec.width)x\(spec.height) is larger than thumbnails.max_output (\(thumbnails.maxOutput))")
        }
        for spec in thumbnails.sizes where spec.width < 1 || spec.height < 1 {
            throw fail("thumbnails.sizes", "\(spec.width)x\(spec.height): sides must be at least 1")
        }
        if cache.directory.isEmpty { throw fail("cache.directory", "must not be empty") }
        if cache.maxBytes <= 0 { throw fail("cache.max_size", "must be greater than 0") }
        if cache.maxEntries < 1 { throw fail("cache.max_entries", "must be at least 1") }
        if cache.inlineMax < 0 || cache.inlineMax > 16 << 20 { throw fail("cache.inline_max", "must be from 0 to 16MB") }
        if cache.writeBatchMax < 1 { throw fail("cache.write_batch_max", "must be at least 1") }
        if !(cache.lowWater > 0 && cache.lowWater <= 1) { throw fail("cache.low_water", "must be greater than 0 and at most 1") }
        if download.concurrency < 1 { throw fail("download.concurrency", "must be at least 1") }
        if download.perHost < 1 { throw fail("download.per_host", "must be at least 1") }
        if download.retryQueueMax < 1 { throw fail("download.retry_queue_max", "must be at least 1") }
        if download.maxBodyBytes < 1 { throw fail("download.max_body_size", "must be greater than 0") }
        if !(1...100).contains(thumbnails.quality) { throw fail("thumbnails.quality", "must be from 1 to 100") }
        if thumbnails.concurrency < 0 { throw fail("thumbnails.concurrency", "must not be negative") }
        if memory.maxBytes < 0 { throw fail("memory.max_size", "must not be negative") }
        if memory.maxEntries < 0 { throw fail("memory.max_entries", "must not be negative") }
    }

    static func expandTilde(_ path: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + path.dropFirst()
    }

    /// `path` made absolute against `base` (nil: the current directory) and
    /// standardized (`.` and `..` removed).
    static func absolutePath(_ path: String, relativeTo base: String?) -> String {
        let expanded = expandTilde(path)
        let root = base ?? FileManager.default.currentDirectoryPath
        let full = expanded.hasPrefix("/") ? expanded : ((root.isEmpty ? "/" : root) as NSString).appendingPathComponent(expanded)
        return (full as NSString).standardizingPath
    }
}
