import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheServiceGrammar
import ArtCacheStore
import ArtCacheTier
import Foundation

/// The whole configuration: each stage's settings, with the documented
/// defaults of `cache.conf`, overridden by the file, overridden by
/// `ARTCACHE_<SECTION>_<KEY>` environment variables (CLI flags override
/// those). This type only reads files and the environment and assembles the
/// stages' own settings types from what it read.
public struct Configuration: Sendable, Equatable {
    public var cache: CacheSettings
    public var download: DownloadSettings
    public var thumbnails: ThumbnailSettings
    public var memory: MemorySettings
    public var service: ServiceSettings
    /// `[presets]`: named thumbnail options (`avatar = "100x100,fit=cover"`),
    /// used in service URLs as `p=avatar`.
    public var presets: [String: ThumbnailOptions]
    /// `[profiles]`: how sources are asked for the rendition a request needs
    /// (iTunes, Twitter/X, GitHub and Gravatar built in).
    public var profiles = ProfileSettings()
    /// `[background]`: the bounds of the work behind answers (``BackgroundScheduler``).
    package var background = BackgroundSettings()
    /// `[tier2]`: the shared second tier (off while its endpoint is empty).
    package var tier2 = Tier2Settings()
    /// The file the configuration was read from, if any.
    public var file: String?

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

    /// The configuration of an empty file and environment, read through the
    /// `ConfigKey` table (equal to `Configuration()`: the tests hold the two together).
    package static let defaults: Configuration = {
        do {
            return try Configuration(values: [:], file: nil)
        } catch {
            fatalError("the built-in defaults are invalid: \(error)")  // a bug in ConfigKey.all, caught by the tests
        }
    }()

    /// Where the system-wide file lives: the Debian package installs it (a
    /// conffile) and the service's unit names it. The last place ``locate``
    /// looks, so an installed `artcache stats` sees the service's cache.
    public static let systemPath = "/etc/artcache/cache.conf"

    /// The lookup order in one sentence, for `--help`, the man pages and the
    /// docs/configuration.md (which all say the same).
    public static let lookupOrder = "--config PATH, else $ARTCACHE_CONFIG, else ./cache.conf, "
        + "else $XDG_CONFIG_HOME/artcache/cache.conf (~/.config/artcache/cache.conf), else \(systemPath); "
        + "the first that exists, or the built-in defaults when none does"

    /// Picks the file the way the CLI does: `explicitPath` (`--config`), else
    /// `$ARTCACHE_CONFIG`, else `./cache.conf` when it exists, else
    /// `$XDG_CONFIG_HOME/artcache/cache.conf` (`~/.config/artcache/cache.conf`)
    /// when it exists, else `systemPath` (``systemPath``, the package's
    /// `/etc/artcache/cache.conf`) when it exists, else nil (built-in
    /// defaults). The last three count only when this process's user (or
    /// root) owns them and group and others cannot write them
    /// (``trustRule``). The path returned is absolute.
    public static func locate(explicitPath: String?, environment: [String: String],
                              currentDirectory: String = FileManager.default.currentDirectoryPath,
                              systemPath: String = Configuration.systemPath) -> String? {
        lookUp(explicitPath: explicitPath, environment: environment, currentDirectory: currentDirectory, systemPath: systemPath).path
    }

    /// Loads `path` (nil: defaults only) and applies environment overrides.
    /// A problem is an `ArtCacheError` with code `.configuration` whose
    /// message names the file (or variable) and the key.
    public static func load(path: String?,
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws(ArtCacheError) -> Configuration {
        do {
            return try read(path: path, environment: environment)
        } catch {
            throw ArtCacheError(error)
        }
    }

    /// ``load(path:environment:)`` with the configuration's own error.
    package static func read(path: String?,
                             environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> Configuration {
        var values: [String: ConfigValue] = [:]
        // Absolute from here on, so a relative cache directory in the file
        // means the same directory whichever directory a process runs in.
        let path = path.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        if let path {
            let text: String
            guard FileManager.default.fileExists(atPath: path) else {
                throw ConfigError(code: .fileNotFound, source: path, key: nil, message: "configuration file not found")
            }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                throw ConfigError(code: .unreadable, source: path, key: nil, message: "cannot read: \(FileErrorText.system(EISDIR))")
            }
            do {
                text = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ConfigError(code: .unreadable, source: path, key: nil, message: "cannot read: \(FileErrorText.reason(error))")
            }
            values = try parse(toml: text, source: path)
            for secret in ["access_key", "secret_key"].compactMap({ ConfigKey.lookup(section: "tier2", name: $0) })
            where values[secret.path].map({ $0 != .string("") }) ?? false {
                throw ConfigError(code: .invalidValue, source: path, key: secret.path, message: "a secret is not read from a file: "
                                  + "set \(secret.environmentName) or the service's credential \(Tier2Settings.credential)")
            }
        }
        try applyEnvironment(environment, to: &values)
        var configuration = try Configuration(values: values, file: path, environment: environment)
        try configuration.tier2.applyCredential(environment: environment, source: path ?? "environment")
        return configuration
    }

    /// Checks the rules that span keys or that a configuration built in code
    /// may break (the ranges the file parser enforces per key). A problem is
    /// an `ArtCacheError` with code `.configuration` naming the key.
    public func validate() throws(ArtCacheError) {
        do {
            try check()
        } catch {
            throw ArtCacheError(error)
        }
    }

    /// ``validate()`` with the configuration's own error.
    package func check() throws(ConfigError) {
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

    package static func expandTilde(_ path: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + path.dropFirst()
    }

    /// `path` made absolute against `base` (nil: the current directory) and
    /// standardized (`.` and `..` removed).
    package static func absolutePath(_ path: String, relativeTo base: String?) -> String {
        let expanded = expandTilde(path)
        let root = base ?? FileManager.default.currentDirectoryPath
        let full = expanded.hasPrefix("/") ? expanded : ((root.isEmpty ? "/" : root) as NSString).appendingPathComponent(expanded)
        return (full as NSString).standardizingPath
    }
}
