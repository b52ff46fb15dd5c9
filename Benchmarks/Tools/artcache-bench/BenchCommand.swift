import ArgumentParser
import ArtCache
@_spi(Benchmarks) import ArtCacheRender
@_spi(Benchmarks) import ArtCacheStore
import Foundation

/// Whole-process benchmark tools for `Benchmarks/compare/run`.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "artcache-bench", abstract: "Benchmark tools for Benchmarks/compare/run.",
        subcommands: [RenderFiles.self, RenderMulti.self, IndexBench.self, Placeholders.self])
}

/// What the render benchmarks share.
struct RenderOptions: ParsableArguments {
    @Option(help: "Output format.") var format = "jpeg"
    @Option(help: "Render every file this many times.") var repeats = 1
    @Option(help: "Renders at once (0 = cores).") var workers = 0
    @Option(help: "Fit: contain, cover or smart.") var fit = "contain"
    @Option(help: "Encoder quality.") var quality = 80
    @Flag(inversion: .prefixedNo, help: "The TurboJPEG fast path for JPEG to JPEG ([thumbnails] fast_jpeg).") var fastJPEG = true
    @Option(help: "Write each file's first render here (for the quality comparison).") var out: String?
    @Flag(help: "Print only the total and the rate.") var quiet = false
    @Option(help: "JPEG outputs this long or longer are progressive ([thumbnails] progressive_from; default: cache.conf's).")
    var progressiveFrom: Int?

    /// Thumbnail settings with `workers` renders at once.
    var settings: ThumbnailSettings {
        var settings = ThumbnailSettings()
        settings.concurrency = workers
        settings.fastJPEG = fastJPEG
        settings.quality = quality
        settings.fit = VariantSpec.Fit(rawValue: fit) ?? .contain
        if let progressiveFrom { settings.progressiveFrom = progressiveFrom }
        return settings
    }
}

/// Renders local files in-process (no cache, no network) with the product's
/// renderer: the thumbnail throughput benchmark (P1).
struct RenderFiles: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "render-files", abstract: "Render image files in-process.")

    @Argument(help: "Image files.") var files: [String]
    @Option(help: "Bounding box WIDTHxHEIGHT.") var size = "100x100"
    @OptionGroup var render: RenderOptions

    func run() async throws {
        let settings = render.settings
        let (format, repeats, quiet) = (render.format, render.repeats, render.quiet)
        guard let spec = settings.spec(size: size, format: VariantSpec.Format(rawValue: format)) else {
            throw ValidationError("--size must be WIDTHxHEIGHT and --format one of auto, jpeg, webp, png, avif")
        }
        let renderer = RenderBenchmark(settings: settings)
        let inputs = try files.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        let started = Date()
        let results = await withTaskGroup(of: (Int, String).self) { group in
            for round in 0..<max(1, repeats) {
                for (index, data) in inputs.enumerated() {
                    group.addTask {
                        do {
                            let image = try await renderer.render(data, spec: spec)
                            if round == 0, let out = self.render.out {
                                let name = URL(fileURLWithPath: files[index]).deletingPathExtension().lastPathComponent
                                try image.data.write(to: URL(fileURLWithPath: out).appendingPathComponent(name + "." + image.format.rawValue))
                            }
                            return (round == 0 ? index : -1, "ok \(image.width)x\(image.height) \(image.format.rawValue) \(image.data.count) bytes")
                        } catch {
                            return (round == 0 ? index : -1, "error \(error)")
                        }
                    }
                }
            }
            var lines = [String](repeating: "", count: inputs.count)
            for await (index, line) in group where index >= 0 { lines[index] = line }
            return lines
        }
        let seconds = Date().timeIntervalSince(started)
        if !quiet { for (file, line) in zip(files, results) { print("\(file): \(line)") } }
        let count = inputs.count * max(1, repeats)
        print(String(format: "%d renders in %.3f s: %.1f img/s", count, seconds, Double(count) / seconds))
    }
}

/// Several variants per image from one decode, in-process (P1b): the rate
/// is images per second (each image gives every size).
struct RenderMulti: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "render-multi", abstract: "Render several sizes per image file.")

    @Argument(help: "Image files.") var files: [String]
    @Option(help: "Bounding boxes, comma-separated, e.g. 100x100,300x300.") var sizes = "100x100,300x300"
    @OptionGroup var render: RenderOptions

    func run() async throws {
        let settings = render.settings
        let (format, repeats, quiet) = (render.format, render.repeats, render.quiet)
        let specs = try sizes.split(separator: ",").map { size in
            guard let spec = settings.spec(size: String(size), format: VariantSpec.Format(rawValue: format)) else {
                throw ValidationError("--sizes must be WIDTHxHEIGHT,... and --format one of auto, jpeg, webp, png, avif")
            }
            return spec
        }
        let renderer = RenderBenchmark(settings: settings)
        let inputs = try files.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        let started = Date()
        let failures = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<max(1, repeats) {
                for data in inputs {
                    group.addTask { (try? await renderer.render(data, specs: specs)) == nil ? 1 : 0 }
                }
            }
            return await group.reduce(0, +)
        }
        let seconds = Date().timeIntervalSince(started)
        let count = inputs.count * max(1, repeats)
        if !quiet { print("\(failures) failed") }
        print(String(format: "%d images x %d sizes in %.3f s: %.1f img/s", count, specs.count, seconds, Double(count) / seconds))
        if failures > 0 { throw ExitCode(1) }
    }
}

/// Index at scale (P5): fills a new cache with synthetic rows, then times
/// opening it and point lookups. It only ever writes into a directory it
/// creates itself, and removes only that directory.
struct IndexBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "index-bench", abstract: "Time opening and lookups of a large index.")

    @Option(help: "A directory to create for the cache (must not exist).") var dir: String
    @Option var rows = 1_000_000
    @Option var lookups = 20_000
    @Option(help: "Bytes of the inline blob of every row (0: rows only).") var inlineBytes = 1024
    @Option(help: "Reads batched before their access times are written (default: the store's).") var accessFlushBatch: Int?
    @Flag(help: "Keep the directory afterwards.") var keep = false
    @Flag(help: """
        Time lookups only, on a cache an earlier run kept (--keep): no fill, no eviction, the directory is \
        kept. Each run touches rows, so give each its own --key-offset to look up rows not touched before.
        """) var reuse = false
    @Option(help: "Added to the looked-up item numbers (rows touched by an earlier --reuse run are cheaper to touch again).")
    var keyOffset = 0

    func run() async throws {
        if reuse {
            guard FileManager.default.fileExists(atPath: dir + "/index.sqlite") else {
                throw ValidationError("\(dir) holds no index: --reuse takes a directory an earlier run kept (--keep)")
            }
        } else {
            guard !FileManager.default.fileExists(atPath: dir) else {
                throw ValidationError("\(dir) exists: index-bench only writes into a directory it creates")
            }
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        }
        defer { if !keep && !reuse { try? FileManager.default.removeItem(atPath: dir) } }
        var settings = CacheSettings()
        settings.directory = dir
        settings.maxBytes = Int64.max / 4
        settings.maxEntries = Int(Int32.max)
        settings.maxAge = 0
        settings.accessFlushInterval = 0
        if let accessFlushBatch { settings.accessFlushBatch = accessFlushBatch }
        let store = try await IndexBenchmark.open(settings: settings)
        var inserted = 0
        while inserted < rows && !reuse {
            let chunk = min(100_000, rows - inserted)
            try await store.insertSyntheticRows(count: chunk, startingAt: inserted, inlineBytes: inlineBytes)
            inserted += chunk
        }
        try await store.close()
        let opening = Date()
        let reopened = try await IndexBenchmark.open(settings: settings)
        let openMs = Date().timeIntervalSince(opening) * 1000
        let keys = try (0..<lookups).map { try IndexBenchmark.key("https://bench.test/item/\(($0 &* 7919 &+ keyOffset) % rows).jpg") }
        // The full lookup (row, inline bytes, batched access touch), awaited
        // from a task: includes the hop to a blocking-pool thread and back.
        var samples: [Double] = []
        var hits = 0
        for key in keys {
            let started = DispatchTime.now().uptimeNanoseconds
            if let size = try await reopened.lookup(key: key), inlineBytes == 0 || size == inlineBytes { hits += 1 }
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1000)
        }
        // A round trip through the blocking pool alone: the hop's part of it.
        var hops: [Double] = []
        for _ in keys {
            let started = DispatchTime.now().uptimeNanoseconds
            try await reopened.blockingPoolRoundTrip()
            hops.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1000)
        }
        hops.sort()
        // The same from a thread of the caller's own (no hop).
        let blocking = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Double], Error>) in
            Thread {
                continuation.resume(with: Result {
                    try keys.map { key in
                        let started = DispatchTime.now().uptimeNanoseconds
                        _ = try reopened.lookupBlocking(key: key)
                        return Double(DispatchTime.now().uptimeNanoseconds - started) / 1000
                    }
                })
            }.start()
        }.sorted()
        try await reopened.close()
        samples.sort()
        let p50 = samples[samples.count / 2], p99 = samples[samples.count * 99 / 100]
        let b50 = blocking[blocking.count / 2], b99 = blocking[blocking.count * 99 / 100]
        let lookups = String(format: "lookup_p50_us=%.1f lookup_p99_us=%.1f blocking_lookup_p50_us=%.1f blocking_lookup_p99_us=%.1f "
                             + "pool_round_trip_p50_us=%.1f pool_round_trip_p99_us=%.1f hits=%d",
                             p50, p99, b50, b99, hops[hops.count / 2], hops[hops.count * 99 / 100], hits)
        if reuse {
            print(lookups)
            return
        }
        // Evict 10%: limits just under the row count, low water at 90% of the rows.
        settings.maxEntries = rows - 1
        settings.lowWater = 0.9 * Double(rows) / Double(rows - 1)
        let evicting = try await IndexBenchmark.open(settings: settings)
        let evictStart = Date()
        try await evicting.enforceLimits()
        let evictMs = Date().timeIntervalSince(evictStart) * 1000
        let left = try await evicting.totals().entries
        // Eviction leaves the rows' deletion to the background reclaimer
        // (puts interleave with its chunks): timed apart, to its end.
        await evicting.waitForReclaim()
        let reclaimMs = Date().timeIntervalSince(evictStart) * 1000 - evictMs
        try await evicting.close()
        print(String(format: "rows=%d inline_bytes=%d open_ms=%.1f ", rows, inlineBytes, openMs) + lookups
              + String(format: " evict_10pct_ms=%.0f reclaim_ms=%.0f left=%d", evictMs, reclaimMs, left))
    }
}

/// Placeholders (size, dominant colour, ThumbHash) of local files, one
/// thread: the cost a stored original adds (issue 21).
struct Placeholders: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "placeholders", abstract: "Compute placeholders of image files.")

    @Argument(help: "Image files.") var files: [String]
    @Option(help: "Compute every file's this many times.") var repeats = 1
    @Flag(inversion: .prefixedNo, help: "libjpeg-turbo's 1/8 decode for JPEG.") var fastJPEG = true

    func run() async throws {
        var settings = ThumbnailSettings()
        settings.fastJPEG = fastJPEG
        let renderer = RenderBenchmark(settings: settings)
        let inputs = try files.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        let started = ContinuousClock.now
        var failed = 0
        for _ in 0..<max(1, repeats) {
            for data in inputs {
                if !renderer.computesIntrinsics(data) { failed += 1 }
            }
        }
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        let count = inputs.count * max(1, repeats)
        print(String(format: "%d placeholders in %.3f s: %.1f µs each, one thread (%d failed)", count, seconds,
                     seconds / Double(count) * 1e6, failed))
    }
}
