import ArtCacheCore
import ArtCachePipeline
import ArtCacheRender
import ArtCacheServiceGrammar
import ArtCacheTier
import Foundation
import Metrics
import Prometheus

/// The service's metrics through swift-metrics, kept in this application's
/// own Prometheus registry (not the process-wide bootstrap, so several
/// applications — tests — never share counters) and emitted on `/metrics`.
/// Handles are made once per label set and reused: a hit costs a few atomic
/// adds, not a registry lookup.
final class ServiceMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let counters = Locked<[String: Metrics.Counter]>([:])
    private let timers = Locked<[String: Metrics.Timer]>([:])
    private let bytesServed: Metrics.Counter
    private let logDropped: Metrics.Counter
    /// Events the log writer had dropped at the last exposition.
    private let logDroppedReported = Locked(0)
    private let writesDropped: Metrics.Counter
    /// Writes the store had dropped at the last exposition.
    private let writesDroppedReported = Locked<Int64>(0)
    /// Totals kept elsewhere (the render pool's), by label: the counter and its value at the last exposition.
    private let mirrored = Locked<[String: (counter: Metrics.Counter, reported: Int)]>([:])
    /// The series every memory hit touches, made once: a hit looks nothing up.
    private let memoryHits: (images: Metrics.Counter, ok: Metrics.Counter, duration: Metrics.Timer)
    /// `artcache_stage_seconds{stage}`, by ``Stage/rawValue``, made once.
    private let stageTimers: [Metrics.Timer]
    /// `artcache_background_seconds{kind}`, by kind, made once for the kinds the scheduler declares.
    private let backgroundTimers: [BackgroundKind: Metrics.Timer]

    /// The buckets of `artcache_stage_seconds`: 0.1 ms to 10 s.
    static let stageBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
    ]

    /// `backgroundKinds`: the kinds of work behind answers (the pipeline's scheduler's).
    init(backgroundKinds: [BackgroundKind] = BackgroundKind.pipelineKinds) {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            .seconds(2.5), .seconds(5), .seconds(10), .seconds(30),
        ]
        factory.durationHistogramBuckets["artcache_stage_seconds"] = Self.stageBuckets
        factory.durationHistogramBuckets["artcache_background_seconds"] = Self.stageBuckets
        self.factory = factory
        stageTimers = Stage.allCases.map { stage in
            Metrics.Timer(label: "artcache_stage_seconds", dimensions: [("stage", stage.name)], factory: factory)
        }
        backgroundTimers = Dictionary(uniqueKeysWithValues: backgroundKinds.map { kind in
            (kind, Metrics.Timer(label: "artcache_background_seconds", dimensions: [("kind", kind.name)], factory: factory))
        })
        bytesServed = Metrics.Counter(label: "artcache_bytes_served_total", factory: factory)
        logDropped = Metrics.Counter(label: "artcache_access_log_dropped_total", factory: factory)
        writesDropped = Metrics.Counter(label: "artcache_store_writes_dropped_total", factory: factory)
        memoryHits = (Metrics.Counter(label: "artcache_images_total", dimensions: [("tier", "memory")], factory: factory),
                      Metrics.Counter(label: "artcache_http_requests_total", dimensions: [("status", "200")], factory: factory),
                      Metrics.Timer(label: "artcache_http_request_duration_seconds", dimensions: [("tier", "memory")], factory: factory))
        // Every counter is on /metrics from the start, at 0, with the labels
        // it is known to take (a rate() over a series that appears only at
        // its first event misses that event).
        for status in Self.knownStatuses { _ = counter("artcache_http_requests_total", "status", String(status)) }
        for tier in ImageResponse.Source.allCases.map(\.rawValue) + ["fallback"] { _ = counter("artcache_images_total", "tier", tier) }
        for reason in Self.knownRefusals { _ = counter("artcache_refusals_total", "reason", reason) }
        for priority in [ImagePriority.high, .normal, .low] { _ = counter("artcache_shed_total", "class", ThumbnailOptions.className(priority)) }
    }

    /// The statuses and refusal reasons `artcache_http_requests_total` and
    /// `artcache_refusals_total` show at 0 before the first of each.
    static let knownStatuses = [200, 304, 400, 401, 403, 404, 405, 413, 422, 429, 502, 503, 504]
    static let knownRefusals = ["not_found", "method_not_allowed", "bad_signature", "missing_signature", "unsigned_refused",
                                "invalid_options", "invalid_source", "unexpected_query", "overloaded", "service_timeout"]

    /// A memory hit answered: ``served(tier:)`` and ``answered(status:tier:seconds:bytes:)``
    /// for the memory tier, through handles made once.
    func memoryHit(status: Int, seconds: Double, bytes: Int) {
        memoryHits.images.increment()
        if status == 200 { memoryHits.ok.increment() } else { counter("artcache_http_requests_total", "status", String(status)).increment() }
        memoryHits.duration.recordNanoseconds(Int64(seconds * 1e9))
        if bytes > 0 { bytesServed.increment(by: bytes) }
    }

    /// One stage of a request took `nanoseconds` (the pipeline's stages
    /// through its ``StageTimings`` observer; admission and answer from the service).
    func stage(_ stage: Stage, nanoseconds: Int64) {
        stageTimers[stage.rawValue].recordNanoseconds(nanoseconds)
    }

    /// One job behind the answers took `nanoseconds` (the pipeline's
    /// ``BackgroundScheduler`` observer).
    func background(_ kind: BackgroundKind, nanoseconds: Int64) {
        backgroundTimers[kind]?.recordNanoseconds(nanoseconds)
    }

    func stage(_ stage: Stage, since start: ContinuousClock.Instant) {
        self.stage(stage, nanoseconds: StageTimings.nanoseconds(ContinuousClock.now - start))
    }

    /// One answered request: by status, latency by tier, bytes.
    func answered(status: Int, tier: String, seconds: Double, bytes: Int) {
        counter("artcache_http_requests_total", "status", String(status)).increment()
        let timer = timers.withLock { cache in
            if let timer = cache[tier] { return timer }
            let timer = Metrics.Timer(label: "artcache_http_request_duration_seconds", dimensions: [("tier", tier)], factory: factory)
            cache[tier] = timer
            return timer
        }
        timer.recordNanoseconds(Int64(seconds * 1e9))
        if bytes > 0 { bytesServed.increment(by: bytes) }
    }

    /// An image answered from a tier (memory, disk, network, revalidated, placeholder, fallback).
    func served(tier: String) {
        counter("artcache_images_total", "tier", tier).increment()
    }

    /// A request refused or failed, by reason (bad_signature, overloaded, blocked_address, http_404...).
    func refused(reason: String) {
        counter("artcache_refusals_total", "reason", reason).increment()
    }

    /// A request refused for overload, on arrival or shed from the queue for
    /// a higher one, by its class (`pri=`: high, normal, low).
    func shed(priority: ImagePriority) {
        counter("artcache_shed_total", "class", ThumbnailOptions.className(priority)).increment()
    }

    /// Brings the counter `label` (with `dimension`, if any) up to `total`,
    /// a monotonic count kept elsewhere.
    private func mirror(_ label: String, _ total: Int) { mirror(label, nil, total) }

    private func mirror(_ label: String, _ dimension: (String, String)?, _ total: Int) {
        let key = label + (dimension.map { "\u{0}" + $0.1 } ?? "")
        let (counter, delta) = mirrored.withLock { cache in
            let counter = cache[key]?.counter
                ?? Metrics.Counter(label: label, dimensions: dimension.map { [$0] } ?? [], factory: factory)
            let delta = max(0, total - (cache[key]?.reported ?? 0))
            cache[key] = (counter, max(total, cache[key]?.reported ?? 0))
            return (counter, delta)
        }
        counter.increment(by: delta)
    }

    private func counter(_ label: String, _ dimension: String, _ value: String) -> Metrics.Counter {
        let key = label + "\u{0}" + value
        return counters.withLock { cache in
            if let counter = cache[key] { return counter }
            let counter = Metrics.Counter(label: label, dimensions: [(dimension, value)], factory: factory)
            cache[key] = counter
            return counter
        }
    }

    /// The Prometheus text, with the gauges of work in progress read now.
    func exposition(activity: PipelineActivity, admission: (inflight: Int, waiting: Int), logDropped dropped: Int = 0,
                    freshness: FreshnessCounters? = nil, upgrades: UpgradeCounts = UpgradeCounts(),
                    tier2: Tier2.Counters? = nil) -> [UInt8] {
        func gauge(_ label: String, _ value: Int) {
            Gauge(label: label, factory: factory).record(Double(value))
        }
        gauge("artcache_downloads_in_progress", activity.downloadsActive)
        gauge("artcache_downloads_queued", activity.downloadsQueued)
        gauge("artcache_renders_in_progress", activity.rendersActive)
        gauge("artcache_renders_queued", activity.rendersQueued)
        gauge("artcache_memory_entries", activity.memoryEntries)
        gauge("artcache_requests_in_flight", admission.inflight)
        gauge("artcache_queue_depth", admission.waiting)
        gauge("artcache_store_writes_pending", activity.writesPending)
        // Work behind answers (docs/background.md): jobs
        // waiting and running by kind, those dropped past a bound, and the
        // bytes the waiting ones hold.
        for (kind, counts) in activity.background {
            for (state, value) in [("queued", counts.queued), ("running", counts.running)] {
                Gauge(label: "artcache_background_jobs", dimensions: [("kind", kind.name), ("state", state)], factory: factory)
                    .record(Double(value))
            }
            mirror("artcache_background_dropped_total", ("kind", kind.name), counts.dropped)
        }
        gauge("artcache_background_queued_bytes", Int(activity.backgroundBytes))
        // Memory: libvips' own allocations (pixel buffers) now and at most
        // since the process started, and the process's resident set.
        gauge("artcache_vips_memory_bytes", VipsMemory.tracked)
        gauge("artcache_vips_memory_highwater_bytes", VipsMemory.highWater)
        if let resident = ProcessMemory.residentBytes() { gauge("process_resident_memory_bytes", resident) }
        // access_log_dropped: log events the writer had no room for (a counter: the new ones since last time).
        let newlyDropped = logDroppedReported.withLock { reported -> Int in
            defer { reported = max(reported, dropped) }
            return max(0, dropped - reported)
        }
        logDropped.increment(by: newlyDropped)
        // writes_dropped: puts behind answers the store did not keep (queue full, or the write failed).
        let newlyDroppedWrites = writesDroppedReported.withLock { reported -> Int64 in
            defer { reported = max(reported, activity.writesDropped) }
            return max(0, activity.writesDropped - reported)
        }
        writesDropped.increment(by: newlyDroppedWrites)
        // Render hand-offs: jobs the render threads took, and wake-ups of a
        // sleeping thread to take one (jobs per wake-up: the batch size).
        mirror("artcache_render_jobs_total", activity.renderJobs)
        mirror("artcache_render_wakeups_total", activity.renderWakeups)
        // Freshness: revalidations by outcome, stale answers by cause,
        // requests failed at once by a remembered failure (negative_ttl).
        let freshness = freshness ?? FreshnessCounters()
        mirror("artcache_revalidations_total", ("outcome", "304"), freshness.revalidated304)
        mirror("artcache_revalidations_total", ("outcome", "200"), freshness.revalidated200)
        mirror("artcache_revalidations_total", ("outcome", "error"), freshness.revalidationErrors)
        for cause in StaleCause.allCases {
            mirror("artcache_stale_answers_total", ("cause", cause.rawValue), freshness.stale[cause] ?? 0)
        }
        mirror("artcache_negative_answers_total", freshness.negativeHits)
        // Format upgrades behind cold answers (docs/formats.md), by outcome.
        mirror("artcache_format_upgrades_total", ("outcome", "kept"), upgrades.kept)
        mirror("artcache_format_upgrades_total", ("outcome", "no_gain"), upgrades.noGain)
        mirror("artcache_format_upgrades_total", ("outcome", "failed"), upgrades.failed)
        // The shared second tier ([tier2]), when configured: reads and writes by outcome.
        if let tier2 {
            for (outcome, value) in [("hit", tier2.hits), ("miss", tier2.misses), ("error", tier2.errors),
                                     ("skipped", tier2.skipped), ("variant_hit", tier2.variantHits),
                                     ("variant_miss", tier2.variantMisses)] {
                mirror("artcache_tier2_reads_total", ("outcome", outcome), value)
            }
            for (outcome, value) in [("written", tier2.writes), ("deduplicated", tier2.deduplicated),
                                     ("variant", tier2.variantWrites), ("error", tier2.writeErrors)] {
                mirror("artcache_tier2_writes_total", ("outcome", outcome), value)
            }
        }
        return registry.emitToBuffer()
    }
}
