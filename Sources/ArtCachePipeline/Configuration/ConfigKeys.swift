import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheServiceGrammar
import ArtCacheStore
import ArtCacheTier
import Foundation

/// One typed value from `cache.conf`, the environment or a flag.
package enum ConfigValue: Sendable, Equatable {
    case string(String)
    case size(Int64)
    case duration(TimeInterval)
    case integer(Int)
    case ratio(Double)
    case bool(Bool)
    case list([String])
}

/// The schema of `cache.conf`: every section and key, its type, bounds and default.
/// Parsing, environment overrides and the documentation test all read this table.
package struct ConfigKey: Sendable {
    package enum Kind: Sendable {
        case string, bool, list
        /// Bytes, from `min` to `max` inclusive.
        case size(min: Int64, max: Int64)
        /// Seconds, from `min` to `max` inclusive.
        case duration(min: TimeInterval, max: TimeInterval)
        case integer(min: Int, max: Int)
        case ratio  // 0 < r <= 1
        case choice([String])
        case color  // #rrggbb
    }

    package let section: String
    package let name: String
    package let kind: Kind
    /// The documented default: read from the stage's own settings type
    /// (`CacheSettings()`, `DownloadSettings()`...), so the table and the
    /// settings a configuration built in code starts from cannot disagree.
    package let defaultValue: ConfigValue

    package var path: String { "\(section).\(name)" }
    package var environmentName: String { "ARTCACHE_\(section.uppercased())_\(name.uppercased())" }

    private static let cache = CacheSettings()
    private static let download = DownloadSettings()
    private static let thumbnails = ThumbnailSettings()
    private static let memory = MemorySettings()
    private static let service = ServiceSettings()
    private static let tier2 = Tier2Settings()
    private static let profiles = ProfileSettings()
    private static let background = BackgroundSettings()

    package static let all: [ConfigKey] = [
        // [cache]
        ConfigKey(section: "cache", name: "directory", kind: .string, defaultValue: .string(CacheSettings.documentedDirectory)),
        ConfigKey(section: "cache", name: "max_size", kind: .size(min: 1, max: .petabyte), defaultValue: .size(cache.maxBytes)),
        ConfigKey(section: "cache", name: "max_entries", kind: .integer(min: 1, max: Int(Int32.max)), defaultValue: .integer(cache.maxEntries)),
        ConfigKey(section: "cache", name: "max_age", kind: .duration(min: 0, max: .century), defaultValue: .duration(cache.maxAge)),
        ConfigKey(section: "cache", name: "low_water", kind: .ratio, defaultValue: .ratio(cache.lowWater)),
        ConfigKey(section: "cache", name: "access_flush_interval", kind: .duration(min: 0, max: .hour), defaultValue: .duration(cache.accessFlushInterval)),
        ConfigKey(section: "cache", name: "access_flush_batch", kind: .integer(min: 1, max: 1_000_000), defaultValue: .integer(cache.accessFlushBatch)),
        ConfigKey(section: "cache", name: "touch_log_fold_rows", kind: .integer(min: 1024, max: 10_000_000), defaultValue: .integer(cache.touchLogFoldRows)),
        ConfigKey(section: "cache", name: "inline_max", kind: .size(min: 0, max: 16 << 20), defaultValue: .size(cache.inlineMax)),
        ConfigKey(section: "cache", name: "mode", kind: .string, defaultValue: .string("0" + String(cache.mode, radix: 8))),
        ConfigKey(section: "cache", name: "write_batch_max", kind: .integer(min: 1, max: 100_000), defaultValue: .integer(cache.writeBatchMax)),
        ConfigKey(section: "cache", name: "sync", kind: .choice(CacheSettings.Sync.allCases.map(\.rawValue)), defaultValue: .string(cache.sync.rawValue)),
        ConfigKey(section: "cache", name: "writer_nice", kind: .integer(min: 0, max: 19), defaultValue: .integer(cache.writerNice)),
        ConfigKey(section: "cache", name: "stale_while_revalidate", kind: .duration(min: 0, max: .year), defaultValue: .duration(cache.staleWhileRevalidate)),
        ConfigKey(section: "cache", name: "stale_if_error", kind: .duration(min: 0, max: .year), defaultValue: .duration(cache.staleIfError)),
        ConfigKey(section: "cache", name: "heuristic_max", kind: .duration(min: 0, max: .year), defaultValue: .duration(cache.heuristicMax)),
        ConfigKey(section: "cache", name: "default_ttl", kind: .duration(min: 0, max: .year), defaultValue: .duration(cache.defaultTTL)),
        ConfigKey(section: "cache", name: "write_behind_max", kind: .integer(min: 0, max: 100_000), defaultValue: .integer(cache.writeBehindMax)),
        // [download]
        ConfigKey(section: "download", name: "concurrency", kind: .integer(min: 1, max: 1024), defaultValue: .integer(download.concurrency)),
        ConfigKey(section: "download", name: "per_host", kind: .integer(min: 1, max: 1024), defaultValue: .integer(download.perHost)),
        ConfigKey(section: "download", name: "queue_per_host", kind: .integer(min: 1, max: 1_000_000), defaultValue: .integer(download.queuePerHost)),
        ConfigKey(section: "download", name: "offline_after", kind: .integer(min: 1, max: 1000), defaultValue: .integer(download.offlineAfter)),
        ConfigKey(section: "download", name: "offline_retry_after", kind: .duration(min: 0, max: .hour), defaultValue: .duration(download.offlineRetryAfter)),
        ConfigKey(section: "download", name: "connect_timeout", kind: .duration(min: 0.1, max: 600), defaultValue: .duration(download.connectTimeout)),
        ConfigKey(section: "download", name: "timeout", kind: .duration(min: 0.1, max: .hour), defaultValue: .duration(download.timeout)),
        ConfigKey(section: "download", name: "low_speed_limit", kind: .size(min: 1, max: 1 << 30), defaultValue: .size(download.lowSpeedLimit)),
        ConfigKey(section: "download", name: "low_speed_time", kind: .duration(min: 1, max: .hour), defaultValue: .duration(download.lowSpeedTime)),
        ConfigKey(section: "download", name: "max_redirects", kind: .integer(min: 0, max: 50), defaultValue: .integer(download.maxRedirects)),
        ConfigKey(section: "download", name: "max_body_size", kind: .size(min: 1, max: 1 << 30), defaultValue: .size(download.maxBodyBytes)),
        ConfigKey(section: "download", name: "user_agent", kind: .string, defaultValue: .string(download.userAgent)),
        ConfigKey(section: "download", name: "allow_http", kind: .bool, defaultValue: .bool(download.allowHTTP)),
        ConfigKey(section: "download", name: "retries", kind: .integer(min: 0, max: 20), defaultValue: .integer(download.retries)),
        ConfigKey(section: "download", name: "retry_base_delay", kind: .duration(min: 0, max: .hour), defaultValue: .duration(download.retryBaseDelay)),
        ConfigKey(section: "download", name: "retry_max_delay", kind: .duration(min: 0, max: .day), defaultValue: .duration(download.retryMaxDelay)),
        ConfigKey(section: "download", name: "retry_queue_max", kind: .integer(min: 1, max: 10_000_000), defaultValue: .integer(download.retryQueueMax)),
        ConfigKey(section: "download", name: "negative_ttl", kind: .duration(min: 0, max: .week), defaultValue: .duration(download.negativeTTL)),
        ConfigKey(section: "download", name: "negative_max", kind: .integer(min: 1, max: 10_000_000), defaultValue: .integer(download.negativeMax)),
        ConfigKey(section: "download", name: "allowed_networks", kind: .list, defaultValue: .list(download.allowedNetworks.map(\.description))),
        ConfigKey(section: "download", name: "allowed_sources", kind: .list, defaultValue: .list(download.allowedSources.map(\.description))),
        // [thumbnails]
        ConfigKey(section: "thumbnails", name: "sizes", kind: .list, defaultValue: .list(thumbnails.sizes.map { "\($0.width)x\($0.height)" })),
        ConfigKey(section: "thumbnails", name: "format", kind: .choice(["auto", "jpeg", "webp", "png", "avif", "jxl"]), defaultValue: .string(thumbnails.format.rawValue)),
        ConfigKey(section: "thumbnails", name: "quality", kind: .integer(min: 1, max: 100), defaultValue: .integer(thumbnails.quality)),
        ConfigKey(section: "thumbnails", name: "fit", kind: .choice(["contain", "cover", "smart"]), defaultValue: .string(thumbnails.fit.rawValue)),
        ConfigKey(section: "thumbnails", name: "background", kind: .color, defaultValue: .string(ThumbnailSettings.colorText(thumbnails.background))),
        ConfigKey(section: "thumbnails", name: "max_source_pixels", kind: .integer(min: 1, max: Int(Int32.max)), defaultValue: .integer(thumbnails.maxSourcePixels)),
        ConfigKey(section: "thumbnails", name: "max_frames", kind: .integer(min: 1, max: 100_000), defaultValue: .integer(thumbnails.maxFrames)),
        ConfigKey(section: "thumbnails", name: "max_animation_pixels", kind: .integer(min: 1, max: Int(Int32.max)), defaultValue: .integer(thumbnails.maxAnimationPixels)),
        ConfigKey(section: "thumbnails", name: "max_output", kind: .integer(min: 1, max: 16384), defaultValue: .integer(thumbnails.maxOutput)),
        ConfigKey(section: "thumbnails", name: "allow_svg", kind: .bool, defaultValue: .bool(thumbnails.allowSVG)),
        ConfigKey(section: "thumbnails", name: "allow_magick", kind: .bool, defaultValue: .bool(thumbnails.allowMagick)),
        ConfigKey(section: "thumbnails", name: "render_timeout", kind: .duration(min: 0.1, max: .hour), defaultValue: .duration(thumbnails.renderTimeout)),
        ConfigKey(section: "thumbnails", name: "progressive_from", kind: .integer(min: 0, max: 100_000), defaultValue: .integer(thumbnails.progressiveFrom)),
        ConfigKey(section: "thumbnails", name: "save_data_quality", kind: .integer(min: 1, max: 100), defaultValue: .integer(thumbnails.saveDataQuality)),
        ConfigKey(section: "thumbnails", name: "fast_jpeg", kind: .bool, defaultValue: .bool(thumbnails.fastJPEG)),
        ConfigKey(section: "thumbnails", name: "concurrency", kind: .integer(min: 0, max: 256), defaultValue: .integer(thumbnails.concurrency)),
        ConfigKey(section: "thumbnails", name: "placeholder", kind: .string, defaultValue: .string(thumbnails.placeholder)),
        // [memory]
        ConfigKey(section: "memory", name: "max_size", kind: .size(min: 0, max: 1 << 40), defaultValue: .size(memory.maxBytes)),
        ConfigKey(section: "memory", name: "max_entries", kind: .integer(min: 0, max: 10_000_000), defaultValue: .integer(memory.maxEntries)),
        // [background]
        ConfigKey(section: "background", name: "max_queued", kind: .integer(min: 1, max: 10_000_000), defaultValue: .integer(background.maxQueued)),
        ConfigKey(section: "background", name: "max_bytes", kind: .size(min: 1 << 10, max: 1 << 40), defaultValue: .size(background.maxBytes)),
        ConfigKey(section: "background", name: "concurrency", kind: .integer(min: 1, max: 256), defaultValue: .integer(background.concurrency)),
        // [service]
        ConfigKey(section: "service", name: "listen", kind: .string, defaultValue: .string(service.listen)),
        ConfigKey(section: "service", name: "keys", kind: .list, defaultValue: .list(service.keys.map { CacheKey.hex($0) })),
        ConfigKey(section: "service", name: "salt", kind: .string, defaultValue: .string(CacheKey.hex(service.salt))),
        ConfigKey(section: "service", name: "allow_unsigned", kind: .bool, defaultValue: .bool(service.allowUnsigned)),
        ConfigKey(section: "service", name: "fallback", kind: .string, defaultValue: .string(service.fallback)),
        ConfigKey(section: "service", name: "max_inflight", kind: .integer(min: 1, max: 100_000), defaultValue: .integer(service.maxInflight)),
        ConfigKey(section: "service", name: "queue", kind: .integer(min: 0, max: 1_000_000), defaultValue: .integer(service.queue)),
        ConfigKey(section: "service", name: "timeout", kind: .duration(min: 0.1, max: .hour), defaultValue: .duration(service.timeout)),
        ConfigKey(section: "service", name: "cache_max_age", kind: .duration(min: 0, max: 10 * .year), defaultValue: .duration(service.cacheMaxAge)),
        ConfigKey(section: "service", name: "shutdown_grace", kind: .duration(min: 0, max: .hour), defaultValue: .duration(service.shutdownGrace)),
        ConfigKey(section: "service", name: "access_log", kind: .bool, defaultValue: .bool(service.accessLog)),
        ConfigKey(section: "service", name: "manifest_max_body", kind: .size(min: 1, max: 1 << 30), defaultValue: .size(service.manifestMaxBody)),
        ConfigKey(section: "service", name: "manifest_signature_max_age", kind: .duration(min: 1, max: .day),
                  defaultValue: .duration(service.manifestSignatureMaxAge)),
        ConfigKey(section: "service", name: "idle_timeout", kind: .duration(min: 0.1, max: .hour), defaultValue: .duration(service.idleTimeout)),
        ConfigKey(section: "service", name: "request_read_timeout", kind: .duration(min: 0.1, max: .hour),
                  defaultValue: .duration(service.requestReadTimeout)),
        ConfigKey(section: "service", name: "max_connections", kind: .integer(min: 1, max: 1_000_000),
                  defaultValue: .integer(service.maxConnections)),
        ConfigKey(section: "service", name: "avif", kind: .choice(ServiceSettings.FormatUse.allCases.map(\.rawValue)),
                  defaultValue: .string(service.avif.rawValue)),
        ConfigKey(section: "service", name: "jxl", kind: .choice(ServiceSettings.FormatUse.allCases.map(\.rawValue)),
                  defaultValue: .string(service.jxl.rawValue)),
        ConfigKey(section: "service", name: "webp", kind: .choice(ServiceSettings.FormatUse.allCases.map(\.rawValue)),
                  defaultValue: .string(service.webp.rawValue)),
        ConfigKey(section: "service", name: "front_url", kind: .string, defaultValue: .string(service.frontURL)),
        // [tier2]: the keys from the environment or the credential only
        ConfigKey(section: "tier2", name: "endpoint", kind: .string, defaultValue: .string(tier2.endpoint)),
        ConfigKey(section: "tier2", name: "bucket", kind: .string, defaultValue: .string(tier2.bucket)),
        ConfigKey(section: "tier2", name: "region", kind: .string, defaultValue: .string(tier2.region)),
        ConfigKey(section: "tier2", name: "access_key", kind: .string, defaultValue: .string("")),
        ConfigKey(section: "tier2", name: "secret_key", kind: .string, defaultValue: .string("")),
        ConfigKey(section: "tier2", name: "variants", kind: .bool, defaultValue: .bool(tier2.variants)),
        ConfigKey(section: "tier2", name: "timeout", kind: .duration(min: 0.01, max: 60), defaultValue: .duration(tier2.timeout)),
        // [profiles] (each other key of the table is a profile line)
        ConfigKey(section: "profiles", name: "fallback_ttl", kind: .duration(min: 0, max: .day), defaultValue: .duration(profiles.fallbackTTL)),
    ]

    package static func lookup(section: String, name: String) -> ConfigKey? {
        all.first { $0.section == section && $0.name == name }
    }

    /// `[presets]`: a table of names the user picks (`avatar = "100x100,fit=cover"`),
    /// each a thumbnail options string; not keys of this table.
    package static let presetsSection = "presets"
    /// `[profiles]`: `fallback_ttl`, and profile lines under names the user picks.
    package static let profilesSection = "profiles"

    package static var sections: [String] {
        var seen: [String] = []
        for key in all where !seen.contains(key.section) { seen.append(key.section) }
        return seen + [presetsSection]
    }
}

extension ConfigKey.Kind {
    package var typeName: String {
        switch self {
        case .string: "a string"
        case .size: "a size \(rangeText!) (like 500MB or 2GiB)"
        case .duration: "a duration \(rangeText!) (like 30d, 12h or 90s)"
        case .bool: "true or false"
        case .list: "an array of strings"
        case .integer(let min, let max): "an integer from \(min) to \(max)"
        case .ratio: "a number greater than 0 and at most 1"
        case .choice(let options): "one of \(options.joined(separator: ", "))"
        case .color: "a colour like #ffffff"
        }
    }

    /// The documented range of a numeric kind, in the units the file uses:
    /// `from 100ms to 1h`... nil for kinds without one.
    package var rangeText: String? {
        switch self {
        case .size(let min, let max): "from \(Self.exact(bytes: min)) to \(Self.exact(bytes: max))"
        case .duration(let min, let max): "from \(Self.exact(seconds: min)) to \(Self.exact(seconds: max))"
        case .integer(let min, let max): "from \(min) to \(max)"
        case .ratio: "greater than 0, at most 1"
        case .string, .bool, .list, .choice, .color: nil
        }
    }

    private static func exact(bytes: Int64) -> String {
        let units: [(String, Int64)] = [("PB", 1_000_000_000_000_000), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20),
                                        ("KiB", 1024), ("GB", 1_000_000_000), ("MB", 1_000_000), ("kB", 1000)]
        for (name, size) in units where bytes >= size && bytes % size == 0 { return "\(bytes / size)\(name)" }
        return "\(bytes)B"
    }

    private static func exact(seconds: TimeInterval) -> String {
        let units: [(String, TimeInterval)] = [("d", 86400), ("h", 3600), ("m", 60)]
        for (name, size) in units where seconds >= size && seconds.truncatingRemainder(dividingBy: size) == 0 {
            return "\(Int(seconds / size))\(name)"
        }
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }

    /// Converts text (an environment variable, a flag or a TOML string) to a value.
    package func parse(text: String) -> ConfigValue? {
        switch self {
        case .string: return .string(text)
        case .choice(let options): return options.contains(text.lowercased()) ? .string(text.lowercased()) : nil
        case .color: return ThumbnailSettings.parseColor(text) != nil ? .string(text) : nil
        case .size(let min, let max):
            guard let bytes = Units.parseSize(text), bytes >= min, bytes <= max else { return nil }
            return .size(bytes)
        case .duration(let min, let max):
            guard let seconds = Units.parseDuration(text), seconds >= min, seconds <= max else { return nil }
            return .duration(seconds)
        case .bool:
            switch text.lowercased() {
            case "true", "1", "yes", "on": return .bool(true)
            case "false", "0", "no", "off": return .bool(false)
            default: return nil
            }
        case .list:
            let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return .list(items.filter { !$0.isEmpty })
        case .integer(let min, let max):
            guard let value = Int(text.trimmingCharacters(in: .whitespaces)), value >= min, value <= max else { return nil }
            return .integer(value)
        case .ratio:
            guard let value = Double(text.trimmingCharacters(in: .whitespaces)) else { return nil }
            return parse(number: value)
        }
    }

    /// Converts a TOML number to a value.
    package func parse(number: Double) -> ConfigValue? {
        switch self {
        case .size(let min, let max):
            guard number == number.rounded(), number >= Double(min), number <= Double(max) else { return nil }
            return .size(Int64(number))
        case .duration(let min, let max):
            return number.isFinite && number >= min && number <= max ? .duration(number) : nil
        case .integer(let min, let max):
            guard number == number.rounded(), number >= Double(min), number <= Double(max) else { return nil }
            return .integer(Int(number))
        case .ratio:
            return number > 0 && number <= 1 ? .ratio(number) : nil
        case .string, .bool, .list, .choice, .color:
            return nil
        }
    }
}

extension Int64 {
    static let petabyte: Int64 = 1_000_000_000_000_000
}

extension TimeInterval {
    static let hour: TimeInterval = 3600
    static let day: TimeInterval = 86400
    static let week: TimeInterval = 7 * 86400
    static let year: TimeInterval = 365 * 86400
    static let century: TimeInterval = 100 * year
}
