import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

extension Configuration {
    /// Every numeric key's current value, by `section.key`: what the range
    /// check reads, whether the value came from a file, the environment, a
    /// flag or code.
    var numericValues: [String: Double] {
        [
            "cache.max_size": Double(cache.maxBytes), "cache.max_entries": Double(cache.maxEntries),
            "cache.max_age": cache.maxAge, "cache.access_flush_interval": cache.accessFlushInterval,
            "cache.access_flush_batch": Double(cache.accessFlushBatch),
            "cache.touch_log_fold_rows": Double(cache.touchLogFoldRows), "cache.inline_max": Double(cache.inlineMax),
            "cache.write_batch_max": Double(cache.writeBatchMax),
            "cache.write_behind_max": Double(cache.writeBehindMax), "cache.writer_nice": Double(cache.writerNice),
            "download.concurrency": Double(download.concurrency), "download.per_host": Double(download.perHost),
            "download.connect_timeout": download.connectTimeout, "download.timeout": download.timeout,
            "download.low_speed_limit": Double(download.lowSpeedLimit), "download.low_speed_time": download.lowSpeedTime,
            "download.max_redirects": Double(download.maxRedirects), "download.max_body_size": Double(download.maxBodyBytes),
            "download.retries": Double(download.retries), "download.retry_base_delay": download.retryBaseDelay,
            "download.retry_max_delay": download.retryMaxDelay, "download.retry_queue_max": Double(download.retryQueueMax),
            "download.queue_per_host": Double(download.queuePerHost), "download.offline_after": Double(download.offlineAfter),
            "download.offline_retry_after": download.offlineRetryAfter,
            "download.negative_ttl": download.negativeTTL, "download.negative_max": Double(download.negativeMax),
            "background.max_queued": Double(background.maxQueued), "background.max_bytes": Double(background.maxBytes),
            "background.concurrency": Double(background.concurrency), "cache.stale_while_revalidate": cache.staleWhileRevalidate,
            "cache.stale_if_error": cache.staleIfError,
            "cache.heuristic_max": cache.heuristicMax, "cache.default_ttl": cache.defaultTTL,
            "thumbnails.quality": Double(thumbnails.quality), "thumbnails.max_source_pixels": Double(thumbnails.maxSourcePixels),
            "thumbnails.max_frames": Double(thumbnails.maxFrames), "thumbnails.max_output": Double(thumbnails.maxOutput),
            "thumbnails.progressive_from": Double(thumbnails.progressiveFrom),
            "thumbnails.max_animation_pixels": Double(thumbnails.maxAnimationPixels),
            "thumbnails.save_data_quality": Double(thumbnails.saveDataQuality),
            "thumbnails.render_timeout": thumbnails.renderTimeout, "thumbnails.concurrency": Double(thumbnails.concurrency),
            "memory.max_size": Double(memory.maxBytes), "memory.max_entries": Double(memory.maxEntries),
            "service.max_inflight": Double(service.maxInflight), "service.queue": Double(service.queue),
            "service.timeout": service.timeout, "tier2.timeout": tier2.timeout, "service.cache_max_age": service.cacheMaxAge,
            "service.shutdown_grace": service.shutdownGrace, "cache.low_water": cache.lowWater,
            "profiles.fallback_ttl": profiles.fallbackTTL, "service.manifest_max_body": Double(service.manifestMaxBody),
            "service.manifest_signature_max_age": service.manifestSignatureMaxAge,
            "service.idle_timeout": service.idleTimeout, "service.request_read_timeout": service.requestReadTimeout,
            "service.max_connections": Double(service.maxConnections),
        ]
    }

    /// Every numeric key inside its documented range (`ConfigKey.Kind.rangeText`);
    /// a value outside it (a zero timeout, a duration too large to convert) is
    /// a configuration error naming the key, never a crash or "no limit".
    func validateRanges(source: String) throws(ConfigError) {
        let values = numericValues
        for key in ConfigKey.all {
            guard let range = key.kind.numericRange else { continue }
            guard let value = values[key.path] else {
                fatalError("\(key.path) has a range but no value in numericValues")  // a bug, caught by the tests
            }
            let inside = value.isFinite && value >= range.lowerBound && value <= range.upperBound
                && !(key.kind.isRatio && value == 0)
            if !inside {
                throw ConfigError(code: .invalidValue, source: source, key: key.path,
                                  message: "\(value.isFinite ? String(value) : "\(value)") is out of range: expected \(key.kind.typeName)")
            }
        }
        if cache.mode & 0o700 != 0o700 || cache.mode & ~0o777 != 0 {
            throw ConfigError(code: .invalidValue, source: source, key: "cache.mode",
                              message: "\(String(cache.mode, radix: 8)): expected octal permissions from 0700 to 0777 (the owner keeps rwx)")
        }
    }
}

extension ConfigKey.Kind {
    /// The inclusive range of a numeric kind (a ratio's excludes 0).
    package var numericRange: ClosedRange<Double>? {
        switch self {
        case .size(let min, let max): Double(min)...Double(max)
        case .duration(let min, let max): min...max
        case .integer(let min, let max): Double(min)...Double(max)
        case .ratio: 0...1
        case .string, .bool, .list, .choice, .color: nil
        }
    }

    var isRatio: Bool { if case .ratio = self { true } else { false } }
}
