// swift-tools-version:6.0
import PackageDescription

// The four search fronts (iTunes, GitHub repositories, GitHub users, a
// Twitter timeline) with artcache as their image layer. A nested package so
// the artcache product stays lean: `swift run --package-path Examples artcache-fronts`.
let package = Package(
    name: "artcache-examples",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: "artcache"),  // a symlink to the root package, so its identity is "artcache" wherever it is cloned
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "Fronts",
            dependencies: [
                .product(name: "ArtCache", package: "artcache"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Mustache", package: "swift-mustache"),
            ]
        ),
        .executableTarget(
            name: "artcache-fronts",
            dependencies: ["Fronts", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "FrontsTests",
            // Applications run live with the root suite's client
            // (LiveTesting.swift, a link to Tests/ArtCacheTests/Support/), not
            // HummingbirdTesting, which links AsyncHTTPClient and NIOSSL.
            dependencies: ["Fronts", .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HummingbirdCore", package: "hummingbird"),
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]
        ),
    ]
)
