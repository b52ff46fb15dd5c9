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
    ],
    targets: [
        .executableTarget(
            name: "ArtCacheBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ArtCache", package: "artcache"),
            ],
            path: "Benchmarks/ArtCacheBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
