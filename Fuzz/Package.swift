// swift-tools-version:6.0
// libFuzzer targets for artcache's parsers, kept out of the main build.
// Build and run them all: Fuzz/run (FUZZ_SECONDS=N per target).
// The `artcache` symlink (-> ..) gives the root package a stable identity
// whatever the checkout folder is called.
//
// The fuzz targets and artcache's own Swift modules are built with
// `-sanitize=fuzzer,address` (here, and in the root manifest when `run` sets
// ARTCACHE_FUZZ=1); the dependencies (NIO, GRDB, Crypto, ...) are not: they
// are the root package's ordinary debug build, reused when `run` builds into
// the root's .build (FUZZ_SCRATCH, as CI does). Each main.swift hands
// control to libFuzzer through LLVMFuzzerRunDriver, because
// SwiftPM links executables with `--defsym main=<module>_main`, which
// shadows libFuzzer's own main. `@testable import ArtCache…` reaches the
// internal parsers: debug builds compile every module with -enable-testing.
import PackageDescription

let fuzzTargets = ["fuzz-sniffer", "fuzz-resultset", "fuzz-url", "fuzz-config", "fuzz-headers", "fuzz-jpeg"]
let sanitize = ["-sanitize=fuzzer,address"]

let package = Package(
    name: "artcache-fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: "artcache"),
    ],
    targets: [
        // Declares LLVMFuzzerRunDriver (defined by the libFuzzer runtime).
        .target(name: "CFuzzerDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzerDriver"], swiftSettings: [.unsafeFlags(sanitize)]),
    ] + fuzzTargets.map { name in
        .executableTarget(
            name: name,
            dependencies: ["FuzzSupport", .product(name: "ArtCacheStages", package: "artcache")]
                // The service's request-head reader (RawHitHandler) reads what clients send.
                + (name == "fuzz-headers" ? [.product(name: "ArtCacheServer", package: "artcache")] : []),
            swiftSettings: [.unsafeFlags(sanitize)],
            linkerSettings: [.unsafeFlags(sanitize)]
        )
    }
)
