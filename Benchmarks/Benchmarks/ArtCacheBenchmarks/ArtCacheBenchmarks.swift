// Speed and memory of artcache's hot paths. Run from the repository root:
//   swift package --package-path Benchmarks benchmark
// Metrics: wall clock, throughput, malloc count, peak resident memory.

import ArtCache
@_spi(Benchmarks) import ArtCacheRender
@_spi(Benchmarks) import ArtCacheStore
import ArtCacheFixtures
import Benchmark
import Foundation

/// Benchmark state made in `setup` and used by the measured closure. The
/// benchmark runner calls setup, the closure and teardown one after another,
/// never at once, which is why @unchecked Sendable is sound here.
final class Fixture<Value>: @unchecked Sendable {
    var value: Value?
}

func temporaryCache(_ label: String) -> CacheSettings {
    var settings = CacheSettings()
    settings.directory = FileManager.default.temporaryDirectory.appendingPathComponent("artcache-bench-\(label)-\(getpid())").path
    try? FileManager.default.removeItem(atPath: settings.directory)
    settings.maxBytes = Int64.max / 4
    settings.maxEntries = Int(Int32.max)
    settings.maxAge = 0
    settings.accessFlushInterval = 0
    return settings
}

func filledStore(_ label: String, rows: Int) async throws -> IndexBenchmark {
    let store = try await IndexBenchmark.open(settings: temporaryCache(label))
    var inserted = 0
    while inserted < rows {
        let chunk = min(100_000, rows - inserted)
        try await store.insertSyntheticRows(count: chunk, startingAt: inserted)
        inserted += chunk
    }
    return store
}

func removeCache(_ store: IndexBenchmark?) async {
    guard let store else { return }
    try? await store.close()
    try? FileManager.default.removeItem(at: store.directory)
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        maxDuration: .seconds(3), maxIterations: 100_000)

    // Sniffing: a mix of real encoder output and text bodies.
    let mixed: [Data] = [".jpg[Q=85]", ".png", ".webp", ".gif", ".tif"].compactMap {
        try? SyntheticImage.make(width: 300, height: 300, suffix: $0)
    } + [Data("<!DOCTYPE html><html><body>502</body></html>".utf8), Data(#"{"message":"Not Found"}"#.utf8)]
    let mixedBytes = mixed.reduce(0) { $0 + $1.count }
    Benchmark("Sniff mixed formats (\(mixed.count) bodies, \(mixedBytes / 1024) KiB per iteration)") { benchmark in
        for _ in benchmark.scaledIterations {
            for body in mixed { blackHole(RenderBenchmark.sniff(body)) }
        }
    }

    let urls = (0..<1000).map { "HTTPS://Is\($0 % 5)-SSL.mzstatic.com:443/image/thumb/Music/\($0)/source/100x100bb.jpg#x" }
    Benchmark("URL normalization + key hash (1000 URLs per iteration)") { benchmark in
        for _ in benchmark.scaledIterations {
            for url in urls { blackHole(try? IndexBenchmark.key(url)) }
        }
    }

    for rows in [10_000, 100_000, 1_000_000] {
        let store = Fixture<IndexBenchmark>()
        Benchmark("Index lookup + access touch at \(rows) rows",
                  configuration: .init(setup: { store.value = try await filledStore("lookup\(rows)", rows: rows) },
                                       teardown: { await removeCache(store.value) })) { benchmark in
            let keys = (0..<1000).map { try! IndexBenchmark.key("https://bench.test/item/\(($0 * 7919) % rows).jpg") }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                for key in keys { blackHole(try! await store.value!.lookupIndexOnly(key: key)) }
            }
            benchmark.stopMeasurement()
        }

        let insertStore = Fixture<IndexBenchmark>()
        let body = (try? SyntheticImage.make(width: 100, height: 100, suffix: ".jpg")) ?? Data()
        Benchmark("Insert (blob + row) at \(rows) rows",
                  configuration: .init(maxIterations: 2000,
                                       setup: { insertStore.value = try await filledStore("insert\(rows)", rows: rows) },
                                       teardown: { await removeCache(insertStore.value) })) { benchmark in
            for iteration in benchmark.scaledIterations {
                blackHole(try! await insertStore.value!.put(url: "https://insert.test/\(iteration)-\(UUID()).jpg", data: body,
                                                           contentType: "image/jpeg"))
            }
        }
    }

    let million = Fixture<CacheSettings>()
    Benchmark("Open a 1,000,000-row cache",
              configuration: .init(maxIterations: 50,
                                   setup: {
                                       let store = try await filledStore("open", rows: 1_000_000)
                                       million.value = store.settings
                                       try await store.close()
                                   },
                                   teardown: { try? FileManager.default.removeItem(atPath: million.value!.directory) })) { benchmark in
        for _ in benchmark.scaledIterations {
            let store = try! await IndexBenchmark.open(settings: million.value!)
            blackHole(store)
            try! await store.close()
        }
    }

    let evictStore = Fixture<IndexBenchmark>()
    let nextRow = Fixture<Int>()  // the closure runs more than once (warm-up): keep the row counter outside
    Benchmark("Evict 10% of 1,000,000 rows",
              configuration: .init(maxDuration: .seconds(20), maxIterations: 3,
                                   setup: {
                                       evictStore.value = try await filledStore("evict", rows: 1_000_000)
                                       nextRow.value = 1_000_000
                                   },
                                   teardown: { await removeCache(evictStore.value) })) { benchmark in
        for _ in benchmark.scaledIterations {
            let next = nextRow.value!
            let store = evictStore.value!
            let bytes = try! await store.totals().bytes
            benchmark.startMeasurement()
            try! await store.purge(toSize: bytes * 9 / 10)
            benchmark.stopMeasurement()
            try! await store.insertSyntheticRows(count: 100_000, startingAt: next)  // refill, unmeasured
            nextRow.value = next + 100_000
        }
    }

    for (label, side, box, suffix) in [("600→100 JPEG", 600, 100, ".jpg[Q=85]"), ("600→100 WebP", 600, 100, ".webp[Q=80]"),
                                       ("1200→300 JPEG", 1200, 300, ".jpg[Q=85]")] {
        guard let source = try? SyntheticImage.make(width: side, height: side, suffix: suffix) else { continue }
        let spec = VariantSpec(width: box, height: box, format: .jpeg)
        var settings = ThumbnailSettings()
        settings.concurrency = 1
        let renderer = RenderBenchmark(settings: settings)
        Benchmark("Thumbnail \(label)") { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try! await renderer.render(source, spec: spec))
            }
        }
    }
}
