import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheServiceGrammar
import ArtCacheStore
import ArtCacheTier
import Foundation

/// Values read from a file and the environment, by `section.key`; a key not
/// given reads as its default from the `ConfigKey` table.
struct ConfigValues {
    let values: [String: ConfigValue]
    /// The file the values came from, or "environment".
    let source: String
    /// Keys the environment set (over the file's): their errors name their variable.
    var fromEnvironment: Set<String> = []

    func value(_ path: String) -> ConfigValue {
        values[path] ?? ConfigKey.all.first { $0.path == path }!.defaultValue  // paths below are keys of the table
    }
    func string(_ p: String) -> String { if case .string(let v) = value(p) { v } else { "" } }
    func size(_ p: String) -> Int64 { if case .size(let v) = value(p) { v } else { 0 } }
    func duration(_ p: String) -> TimeInterval { if case .duration(let v) = value(p) { v } else { 0 } }
    func integer(_ p: String) -> Int { if case .integer(let v) = value(p) { v } else { 0 } }
    func ratio(_ p: String) -> Double { if case .ratio(let v) = value(p) { v } else { 1 } }
    func bool(_ p: String) -> Bool { if case .bool(let v) = value(p) { v } else { false } }
    func list(_ p: String) -> [String] { if case .list(let v) = value(p) { v } else { [] } }

    func invalid(_ key: String, _ message: String) -> ConfigError {
        ConfigError(code: .invalidValue, source: fromEnvironment.contains(key) ? "environment" : source, key: key, message: message)
    }
}

/// Assembling: each stage's settings from the values read.
extension Configuration {
    init(values: [String: ConfigValue], file: String?, environment: [String: String] = [:]) throws(ConfigError) {
        let overridden = Set(ConfigKey.all.filter { environment[$0.environmentName] != nil }.map(\.path))
        let read = ConfigValues(values: values, source: file ?? "environment", fromEnvironment: overridden)
        self.init(cache: try Self.cache(read, file: file), download: try Self.download(read),
                  thumbnails: try Self.thumbnails(read),
                  memory: MemorySettings(maxBytes: read.size("memory.max_size"), maxEntries: read.integer("memory.max_entries")),
                  service: try Self.service(read), presets: try Self.presets(read))
        profiles = try Self.profiles(read)
        background.maxQueued = read.integer("background.max_queued")
        background.maxBytes = read.size("background.max_bytes")
        background.concurrency = read.integer("background.concurrency")
        tier2 = try Self.tier2(read)
        self.file = file
        try check()
    }

    /// `[cache]`. A relative directory in a file is relative to that file;
    /// from the environment, to the directory the process started in.
    /// Either way it is made absolute once, here.
    static func cache(_ read: ConfigValues, file: String?) throws(ConfigError) -> CacheSettings {
        var cache = CacheSettings()
        var directory = Configuration.expandTilde(read.string("cache.directory"))
        if !directory.isEmpty {
            directory = Configuration.absolutePath(directory, relativeTo: file.map { ($0 as NSString).deletingLastPathComponent })
        }
        cache.directory = directory
        cache.maxBytes = read.size("cache.max_size")
        cache.maxEntries = read.integer("cache.max_entries")
        cache.maxAge = read.duration("cache.max_age")
        cache.lowWater = read.ratio("cache.low_water")
        cache.accessFlushInterval = read.duration("cache.access_flush_interval")
        cache.accessFlushBatch = read.integer("cache.access_flush_batch")
        cache.touchLogFoldRows = read.integer("cache.touch_log_fold_rows")
        cache.inlineMax = read.size("cache.inline_max")
        cache.writeBatchMax = read.integer("cache.write_batch_max")
        cache.writeBehindMax = read.integer("cache.write_behind_max")
        cache.writerNice = read.integer("cache.writer_nice")
        cache.staleWhileRevalidate = read.duration("cache.stale_while_revalidate")
        cache.staleIfError = read.duration("cache.stale_if_error")
        cache.heuristicMax = read.duration("cache.heuristic_max")
        cache.defaultTTL = read.duration("cache.default_ttl")
        cache.sync = CacheSettings.Sync(rawValue: read.string("cache.sync")) ?? cache.sync
        let modeText = read.string("cache.mode")
        guard let mode = CacheSettings.parseMode(modeText) else {
            throw read.invalid("cache.mode", "invalid value \"\(modeText)\": expected octal permissions from 0700 to 0777 (the owner keeps rwx)")
        }
        cache.mode = mode
        return cache
    }

    /// `[download]`.
    static func download(_ read: ConfigValues) throws(ConfigError) -> DownloadSettings {
        var download = DownloadSettings()
        download.concurrency = read.integer("download.concurrency")
        download.perHost = read.integer("download.per_host")
        download.connectTimeout = read.duration("download.connect_timeout")
        download.timeout = read.duration("download.timeout")
        download.lowSpeedLimit = read.size("download.low_speed_limit")
        download.lowSpeedTime = read.duration("download.low_speed_time")
        download.maxRedirects = read.integer("download.max_redirects")
        download.maxBodyBytes = read.size("download.max_body_size")
        download.userAgent = read.string("download.user_agent")
        download.allowHTTP = read.bool("download.allow_http")
        download.retries = read.integer("download.retries")
        download.retryBaseDelay = read.duration("download.retry_base_delay")
        download.retryMaxDelay = read.duration("download.retry_max_delay")
        download.retryQueueMax = read.integer("download.retry_queue_max")
        download.negativeTTL = read.duration("download.negative_ttl")
        download.negativeMax = read.integer("download.negative_max")
        download.queuePerHost = read.integer("download.queue_per_host")
        download.offlineAfter = read.integer("download.offline_after")
        download.offlineRetryAfter = read.duration("download.offline_retry_after")
        for text in read.list("download.allowed_networks") {
            guard let network = IPNetwork(text.trimmingCharacters(in: .whitespaces)) else {
                throw read.invalid("download.allowed_networks", "invalid network \"\(text)\": expected CIDR like 127.0.0.1/32 or fd00::/8")
            }
            download.allowedNetworks.append(network)
        }
        for text in read.list("download.allowed_sources") {
            guard let pattern = HostPattern(text) else {
                throw read.invalid("download.allowed_sources", "invalid host pattern \"\(text)\": expected example.com, *.example.com or *")
            }
            download.allowedSources.append(pattern)
        }
        return download
    }

    /// `[thumbnails]`.
    static func thumbnails(_ read: ConfigValues) throws(ConfigError) -> ThumbnailSettings {
        var thumbnails = ThumbnailSettings()
        thumbnails.fit = VariantSpec.Fit(rawValue: read.string("thumbnails.fit")) ?? thumbnails.fit
        thumbnails.format = VariantSpec.Format(rawValue: read.string("thumbnails.format")) ?? thumbnails.format
        thumbnails.quality = read.integer("thumbnails.quality")
        thumbnails.background = ThumbnailSettings.parseColor(read.string("thumbnails.background")) ?? thumbnails.background
        thumbnails.sizes = []
        for text in read.list("thumbnails.sizes") {
            guard let spec = VariantSpec(size: text, fit: thumbnails.fit, format: thumbnails.format, quality: thumbnails.quality,
                                         background: thumbnails.background) else {
                throw read.invalid("thumbnails.sizes", "invalid size \"\(text)\": expected WIDTHxHEIGHT like 100x100")
            }
            thumbnails.sizes.append(spec)
        }
        thumbnails.maxSourcePixels = read.integer("thumbnails.max_source_pixels")
        thumbnails.maxFrames = read.integer("thumbnails.max_frames")
        thumbnails.maxAnimationPixels = read.integer("thumbnails.max_animation_pixels")
        thumbnails.maxOutput = read.integer("thumbnails.max_output")
        thumbnails.allowSVG = read.bool("thumbnails.allow_svg")
        thumbnails.allowMagick = read.bool("thumbnails.allow_magick")
        thumbnails.fastJPEG = read.bool("thumbnails.fast_jpeg")
        thumbnails.progressiveFrom = read.integer("thumbnails.progressive_from")
        thumbnails.saveDataQuality = read.integer("thumbnails.save_data_quality")
        thumbnails.concurrency = read.integer("thumbnails.concurrency")
        thumbnails.placeholder = Configuration.expandTilde(read.string("thumbnails.placeholder"))
        thumbnails.renderTimeout = read.duration("thumbnails.render_timeout")
        return thumbnails
    }

    /// `[service]`: malformed listen, keys or salt name their key.
    static func service(_ read: ConfigValues) throws(ConfigError) -> ServiceSettings {
        var service = ServiceSettings()
        guard let listen = ServiceSettings.parseListen(read.string("service.listen")) else {
            throw read.invalid("service.listen",
                               "invalid value \"\(read.string("service.listen"))\": expected HOST:PORT like 127.0.0.1:8080 or [::1]:8080")
        }
        (service.host, service.port) = listen
        for (index, text) in read.list("service.keys").enumerated() {
            guard let key = ServiceSettings.parseHex(text), key.count >= 16 else {
                throw read.invalid("service.keys",
                                   "key \(index + 1) is not hex of at least 16 bytes (32 hex digits); make one with `openssl rand -hex 32`")
            }
            service.keys.append(key)
        }
        guard let salt = ServiceSettings.parseHex(read.string("service.salt")) else {
            throw read.invalid("service.salt", "not an even number of hex digits")
        }
        service.salt = salt
        service.allowUnsigned = read.bool("service.allow_unsigned")
        service.fallback = Configuration.expandTilde(read.string("service.fallback"))
        service.avif = ServiceSettings.FormatUse(rawValue: read.string("service.avif")) ?? service.avif
        service.jxl = ServiceSettings.FormatUse(rawValue: read.string("service.jxl")) ?? service.jxl
        service.webp = ServiceSettings.FormatUse(rawValue: read.string("service.webp")) ?? service.webp
        service.maxInflight = read.integer("service.max_inflight")
        service.queue = read.integer("service.queue")
        service.timeout = read.duration("service.timeout")
        service.cacheMaxAge = read.duration("service.cache_max_age")
        service.shutdownGrace = read.duration("service.shutdown_grace")
        service.accessLog = read.bool("service.access_log")
        service.manifestMaxBody = read.size("service.manifest_max_body")
        service.manifestSignatureMaxAge = read.duration("service.manifest_signature_max_age")
        service.idleTimeout = read.duration("service.idle_timeout")
        service.requestReadTimeout = read.duration("service.request_read_timeout")
        service.maxConnections = read.integer("service.max_connections")
        let front = read.string("service.front_url")
        guard let frontURL = OperatorEndpoint.url(front, allowingPath: true) else {
            throw read.invalid("service.front_url", "\"\(front)\" is not an http or https URL of a host, without query or fragment")
        }
        service.frontURL = frontURL
        return service
    }

    /// `[tier2]`. Its keys come from the environment (a file's are refused
    /// in ``read(path:environment:)``) or the `tier2` credential.
    static func tier2(_ read: ConfigValues) throws(ConfigError) -> Tier2Settings {
        var tier2 = Tier2Settings()
        let endpoint = read.string("tier2.endpoint")
        guard let kept = OperatorEndpoint.url(endpoint, allowingPath: false) else {
            throw read.invalid("tier2.endpoint", "\"\(endpoint)\" is not an http or https URL of a host, without path, query or fragment")
        }
        tier2.endpoint = kept
        tier2.bucket = read.string("tier2.bucket")
        guard Tier2Settings.isValidBucket(tier2.bucket) else {
            throw read.invalid("tier2.bucket", "\"\(tier2.bucket)\" is not a bucket name (3 to 63 of a-z, 0-9, '.', '-')")
        }
        tier2.region = read.string("tier2.region")
        tier2.accessKey = read.string("tier2.access_key")
        tier2.secretKey = read.string("tier2.secret_key")
        tier2.timeout = read.duration("tier2.timeout")
        tier2.variants = read.bool("tier2.variants")
        return tier2
    }

    /// `[presets]`: each a valid options string without a preset of its own.
    static func presets(_ read: ConfigValues) throws(ConfigError) -> [String: ThumbnailOptions] {
        var presets: [String: ThumbnailOptions] = [:]
        for (path, value) in read.values where path.hasPrefix("presets.") {
            let name = String(path.dropFirst("presets.".count))
            guard case .string(let text) = value else { continue }
            guard ThumbnailOptions.isPresetName(name) else {
                throw read.invalid(path, "preset names are [a-z0-9_-]+")
            }
            do throws(ArtCacheError) {
                let options = try ThumbnailOptions(parsing: text)
                guard options.preset == nil else {
                    throw ArtCacheError(.invalidRequest, "a preset cannot name another preset")
                }
                presets[name] = try options.resolved(presets: [:])
            } catch {
                throw read.invalid(path, error.message)
            }
        }
        return presets
    }

    /// `[profiles]`: `fallback_ttl` and the profile lines (each parsed; a
    /// built-in name replaces that profile, an empty line removes it).
    static func profiles(_ read: ConfigValues) throws(ConfigError) -> ProfileSettings {
        var settings = ProfileSettings()
        settings.fallbackTTL = read.duration("profiles.fallback_ttl")
        // In name order: lines that add profiles are tried after the built-in ones, alphabetically.
        for (path, value) in read.values.sorted(by: { $0.key < $1.key })
        where path.hasPrefix("profiles.") && path != "profiles.fallback_ttl" {
            guard case .string(let text) = value else { continue }
            let name = String(path.dropFirst("profiles.".count))
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else {
                throw read.invalid(path, "profile names are [a-z0-9_-]+")
            }
            do throws(ProviderProfile.Invalid) {
                try settings.apply(name, line: text)
            } catch {
                throw read.invalid(path, error.description)
            }
        }
        return settings
    }
}
