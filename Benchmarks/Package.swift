// swift-tools-version:6.1
// Benchmarks for artcache (ordo-one/benchmark), kept out of the main build.
// Run: swift package --package-path Benchmarks benchmark
// The `artcache` symlink (-> ..) gives the root package a stable identity
// whatever the checkout folder is called.
import PackageDescription

let package = Package(
    name: "artcache-benchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: "artcache"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .executableTarget(
            name: "ArtCacheBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ArtCache", package: "artcache"),
                .product(name: "ArtCacheStages", package: "artcache"),
                .product(name: "ArtCacheFixtures", package: "artcache"),
            ],
            path: "Benchmarks/ArtCacheBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Whole-process tools for compare/run: in-process render throughput
        // and index-at-scale timings. Not part of the artcache product.
        .executableTarget(
            name: "artcache-bench",
            dependencies: [
                .product(name: "ArtCache", package: "artcache"),
                .product(name: "ArtCacheStages", package: "artcache"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/artcache-bench"
        ),
    ]
)
