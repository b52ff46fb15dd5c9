// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "artcache",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ArtCache", targets: ["ArtCache"]),
        .executable(name: "artcache", targets: ["artcache"]),
        // Generated images for tests, benchmarks and examples; never linked
        // into the `artcache` binary.
        .library(name: "ArtCacheFixtures", targets: ["ArtCacheFixtures"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // libvips through pkg-config, plus a tiny non-variadic, glib-free shim.
        .systemLibrary(name: "CVipsSystem", pkgConfig: "vips",
                       providers: [.apt(["libvips-dev"])]),
        .target(name: "CVipsShim", dependencies: ["CVipsSystem"]),
        // libcurl through pkg-config, plus a shim for curl_easy_setopt & co.
        .systemLibrary(name: "CCurlSystem", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "CCurlShim", dependencies: ["CCurlSystem"]),
        // Test fixtures made with libvips (they unblock savers the product
        // never uses): a target of their own, outside the product.
        .target(name: "CVipsFixtures", dependencies: ["CVipsShim", "CVipsSystem"]),
        .target(name: "ArtCacheFixtures", dependencies: ["CVipsFixtures", "CVipsShim"]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(
            name: "ArtCache",
            dependencies: [
                "CVipsShim",
                "CCurlShim",
                "CZlib",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]
        ),
        // A loopback HTTP/1.1 origin that misbehaves on purpose (cut bodies,
        // dribbled bodies, wrong types): serves the demo and the downloader
        // tests. Raw sockets, because breaking the wire is its job.
        .target(name: "ArtCacheOrigin"),
        .executableTarget(
            name: "artcache",
            dependencies: [
                "ArtCache",
                "ArtCacheOrigin",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Demo")]
        ),
        // Test-only: concurrent writers for the crash and multi-process tests.
        .executableTarget(
            name: "artcache-stress",
            dependencies: ["ArtCache", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "ArtCacheTests",
            dependencies: ["ArtCache", "ArtCacheOrigin", "ArtCacheFixtures", "artcache", "artcache-stress", "CVipsShim", "CZlib"]
        ),
    ]
)
