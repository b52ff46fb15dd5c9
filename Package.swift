// swift-tools-version:6.0
import PackageDescription

// Fuzz/run builds the fuzz targets with ARTCACHE_FUZZ=1, into this
// package's own .build: then artcache's Swift modules (not its
// dependencies) are compiled for libFuzzer's coverage and AddressSanitizer,
// and the dependencies are the ones every debug build here compiled, reused
// instead of built again instrumented (most of a cold fuzz build). Without
// the variable this is empty and changes nothing.
let fuzzing: [SwiftSetting] = Context.environment["ARTCACHE_FUZZ"] == "1"
    ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []

let package = Package(
    name: "artcache",
    platforms: [.macOS(.v14)],
    products: [
        // The embedding API: `import ArtCache` (it re-exports the pipeline and
        // the public value types of the stages below; nothing else of theirs
        // is public).
        .library(name: "ArtCache", targets: ["ArtCache"]),
        // The thumbnail HTTP service (`artcache serve`) as a library: fronts
        // and tests build the same application.
        .library(name: "ArtCacheServer", targets: ["ArtCacheServer"]),
        .executable(name: "artcache", targets: ["artcache"]),
        // The pipeline and the stages under it, module by module, for the
        // nested Benchmarks and Fuzz packages only (`@_spi(Benchmarks)`,
        // `@testable`): no API promise.
        .library(name: "ArtCacheStages", targets: ["ArtCachePipeline", "ArtCacheCore", "ArtCacheFetch", "ArtCacheStore",
                                                       "ArtCacheRender", "ArtCacheResultSets", "ArtCacheServiceGrammar",
                                                       "ArtCacheTier"]),
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
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // The embedding API's one import (`import ArtCache`): re-exports the
        // pipeline and the stages. Embedders depend on it (Examples); no
        // target of this package does (scripts/imports/check).
        .target(name: "ArtCache", dependencies: ["ArtCachePipeline", "ArtCacheCore", "ArtCacheFetch", "ArtCacheStore",
                                                 "ArtCacheRender", "ArtCacheResultSets", "ArtCacheServiceGrammar", "ArtCacheTier"]),
        // libvips through pkg-config, plus a tiny non-variadic, glib-free shim.
        .systemLibrary(name: "CVipsSystem", pkgConfig: "vips",
                       providers: [.apt(["libvips-dev"])]),
        // libtiff (libvips' TIFF reader) only to ask which compressions it has.
        .target(name: "CVipsShim", dependencies: ["CVipsSystem"], linkerSettings: [.linkedLibrary("tiff")]),
        // libcurl through pkg-config, plus a shim for curl_easy_setopt & co.
        .systemLibrary(name: "CCurlSystem", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "CCurlShim", dependencies: ["CCurlSystem"]),
        // Test fixtures made with libvips (they unblock savers the product
        // never uses): a target of their own, outside the product. lcms2
        // (libvips' own colour engine) makes their Adobe RGB profile; only
        // the fixtures link it.
        .target(name: "CVipsFixtures", dependencies: ["CVipsShim", "CVipsSystem"],
                linkerSettings: [.linkedLibrary("lcms2")]),
        .target(name: "ArtCacheFixtures", dependencies: ["CVipsFixtures", "CVipsShim"]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // libjpeg-turbo's TurboJPEG API and libwebp's encoder, for the JPEG
        // fast path (non-variadic: no shims).
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CWebP", pkgConfig: "libwebp", providers: [.apt(["libwebp-dev"])]),
        // libheif (with libaom) for the fast path's AVIF outputs, called
        // directly: libvips' heifsave costs more than the encode at artwork sizes.
        .systemLibrary(name: "CHeif", pkgConfig: "libheif", providers: [.apt(["libheif-dev"])]),
        // An AV1 encoder plugin for libheif that keeps its libaom encoders
        // between images (libheif's own makes one per image).
        .target(name: "CHeifAOM", dependencies: ["CHeif"], linkerSettings: [.linkedLibrary("aom")]),
        // The fast path's resample loop in C: fast in debug builds too.
        .target(name: "CPixels"),
        // The target graph is the architecture (arrows point down only), and
        // it is what the code imports: every target declares each module it
        // imports and imports each module it declares (scripts/imports/check,
        // run by CI).
        //
        //   artcache (CLI) ── ArtCacheServer            Examples (fronts) ── ArtCache
        //                 \        |                       (umbrella: re-exports the pipeline
        //                    ArtCachePipeline               and the stages; for embedders only)
        //              /      /     |     \      \      \      pipeline, prefetcher, memory tier,
        //   ResultSets  ServiceGrammar  Fetch  Store  Render  Tier    configuration, manifests
        //              \      \     |     /      /      /
        //                      ArtCacheCore                     URL + key, validators, priority,
        //                                                       errors, locks and threads
        //
        // (The server and the CLI also import the stages whose types they use;
        // ArtCacheServiceGrammar uses Fetch and Render for their value types;
        // ArtCacheTier, the shared second tier, uses Fetch's libcurl engine.)
        // Cross-target internals are `package`; `public` is the embedding API;
        // `@_spi(Benchmarks)` is two small façades (IndexBenchmark,
        // RenderBenchmark) for the Benchmarks package, which cannot see
        // `package` (Fuzz reaches internals by `@testable`).
        .target(
            name: "ArtCacheCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: fuzzing
        ),
        // libcurl engine, address policy, host breaker, HTTP cache policy.
        .target(
            name: "ArtCacheFetch",
            dependencies: ["ArtCacheCore", "CCurlShim", .product(name: "Logging", package: "swift-log")],
            swiftSettings: fuzzing
        ),
        // SQLite index, blobs, group commit, eviction, verify, purge, migration.
        .target(
            name: "ArtCacheStore",
            dependencies: ["ArtCacheCore", .product(name: "Crypto", package: "swift-crypto"), .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: fuzzing
        ),
        // Sniffing, libvips, and the TurboJPEG fast path.
        .target(
            name: "ArtCacheRender",
            dependencies: ["ArtCacheCore", "CVipsShim", "CZlib", "CTurboJPEG", "CWebP", "CHeif", "CHeifAOM", "CPixels"],
            swiftSettings: fuzzing
        ),
        // The result sets the prefetcher mines for image URLs (iTunes, GitHub,
        // Twitter): pure parsing of untrusted JSON, fuzzed.
        .target(name: "ArtCacheResultSets", dependencies: ["ArtCacheCore"], swiftSettings: fuzzing),
        // The service's contract with its clients: its settings, the URL
        // grammar (`ThumbnailOptions`) and the signer; no I/O, and no codec
        // or libcurl (its value types live in Core): a front that only signs
        // URLs links neither libvips nor libcurl. Below
        // the pipeline, whose manifests sign URLs (and warm a ring through its
        // front door with them), and the server, which checks them.
        .target(
            name: "ArtCacheServiceGrammar",
            dependencies: ["ArtCacheCore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: fuzzing
        ),
        // The shared second tier: originals in an S3-compatible bucket (Ceph
        // RGW, MinIO, S3) over Fetch's libcurl engine, signed by libcurl's SigV4.
        .target(
            name: "ArtCacheTier",
            dependencies: ["ArtCacheCore", "ArtCacheFetch", .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: fuzzing
        ),
        // The pipeline, the prefetcher, the memory tier, configuration and
        // manifests: the stages put together.
        .target(
            name: "ArtCachePipeline",
            dependencies: [
                "ArtCacheCore",
                "ArtCacheFetch",
                "ArtCacheTier",
                "ArtCacheStore",
                "ArtCacheRender",
                "ArtCacheResultSets",
                "ArtCacheServiceGrammar",
                                .product(name: "Logging", package: "swift-log"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: fuzzing
        ),
        // The thumbnail service: HTTP → ImageRequest → HTTP, with signing,
        // negotiation, admission, metrics. Over the pipeline; what it reads of
        // the stages below (the store's entries, the renderer's formats,
        // Core's locks) are their `package` members, imported by name.
        .target(
            name: "ArtCacheServer",
            dependencies: [
                "ArtCachePipeline", "ArtCacheCore", "ArtCacheFetch", "ArtCacheRender", "ArtCacheResultSets",
                "ArtCacheServiceGrammar", "ArtCacheTier",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: fuzzing
        ),
        // A loopback HTTP/1.1 origin that misbehaves on purpose (cut bodies,
        // dribbled bodies, wrong types): serves the demo and the downloader
        // tests. Raw sockets, because breaking the wire is its job. (Core
        // only for its lock.)
        .target(name: "ArtCacheOrigin", dependencies: ["ArtCacheCore"]),
        .executableTarget(
            name: "artcache",
            dependencies: [
                "ArtCachePipeline", "ArtCacheServer", "ArtCacheCore", "ArtCacheFetch", "ArtCacheStore", "ArtCacheRender",
                "ArtCacheResultSets", "ArtCacheServiceGrammar", "ArtCacheTier", "ArtCacheOrigin",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Demo")]
        ),
        // Test-only: concurrent writers for the crash and multi-process tests.
        .executableTarget(
            name: "artcache-stress",
            dependencies: ["ArtCacheStore", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "ArtCacheTests",
            dependencies: ["ArtCachePipeline", "ArtCacheTier", "ArtCacheCore", "ArtCacheFetch", "ArtCacheStore", "ArtCacheRender",
                           "ArtCacheResultSets", "ArtCacheServiceGrammar", "ArtCacheServer", "ArtCacheOrigin", "ArtCacheFixtures", "artcache", "artcache-stress",
                           "CVipsShim", "CZlib", "CHeifAOM", "CPixels", "CTurboJPEG",
                           .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "Logging", package: "swift-log"),
                           // Not HummingbirdTesting: its target links AsyncHTTPClient, NIOSSL (a
                           // second BoringSSL), NIOHTTP2... into the debug and TSan builds; the
                           // tests run applications live with a client of their own
                           // (Tests/ArtCacheTests/Support/LiveTesting.swift).
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HummingbirdCore", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "NIOEmbedded", package: "swift-nio"),
                           .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                           .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]
        ),
    ]
)
