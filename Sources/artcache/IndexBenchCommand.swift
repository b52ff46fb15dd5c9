import ArgumentParser
@_spi(Benchmarks) import ArtCache
import Foundation

/// Index at scale, for `Benchmarks/compare/run` (P5): fills a cache with
/// synthetic rows, then times opening it and point lookups.
struct IndexBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index-bench", abstract: "Time opening and lookups of a large index (benchmarks).", shouldDisplay: false)

    @OptionGroup var global: GlobalOptions
    @Option var rows = 1_000_000
    @Option var lookups = 20_000
    @Flag(help: "Reuse the rows already in --cache-dir.") var reuse = false

    func run() async throws {
        try await reportingErrors {
            var settings = try global.configuration().cache
            settings.maxBytes = Int64.max / 4
            settings.maxEntries = Int(Int32.max)
            settings.maxAge = 0
            settings.accessFlushInterval = 0
            if !reuse {
                try? FileManager.default.removeItem(atPath: settings.directory)
                let store = try await CacheStore.open(settings: settings)
                var inserted = 0
                while inserted < rows {
                    let chunk = min(100_000, rows - inserted)
                    try await store.insertSyntheticRows(count: chunk, startingAt: inserted)
                    inserted += chunk
                }
                try await store.close()
            }
            let opening = Date()
            let store = try await CacheStore.open(settings: settings)
            let openMs = Date().timeIntervalSince(opening) * 1000
            var samples: [Double] = []
            samples.reserveCapacity(lookups)
            var hits = 0
            for i in 0..<lookups {
                let key = try NormalizedURL("https://bench.test/item/\((i &* 7919) % rows).jpg").key
                let started = DispatchTime.now().uptimeNanoseconds
                if try await store.lookupIndexOnly(key: key) { hits += 1 }
                samples.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1000)
            }
            try await store.close()
            samples.sort()
            let p50 = samples[samples.count / 2], p99 = samples[samples.count * 99 / 100]
            print(String(format: "rows=%d open_ms=%.1f lookup_p50_us=%.1f lookup_p99_us=%.1f hits=%d", rows, openMs, p50, p99, hits))
        }
    }
}
