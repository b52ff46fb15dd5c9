import ArgumentParser
import ArtCacheCore
import ArtCacheOrigin
import ArtCacheResultSets
import Foundation

/// The main job on a bundled example, offline: a loopback origin serves the
/// bundled sample images (some with wrong Content-Types, one HTML error page),
/// and an iTunes-shaped result set pointing at it is prefetched, twice.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Prefetch an iTunes-shaped result set from a loopback origin serving the bundled samples; print the summary and stats.")

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }

    /// Sample body, the Content-Type a misconfigured origin sends with it.
    static let samples: [(file: String, declared: String?, title: String)] = [
        ("cover-zone.jpg", "image/jpeg", "Zone Plate"),
        ("cover-sines.png", "image/png", "Sines"),
        ("cover-eye.webp", "image/png", "Eye Test"),                 // wrong: WebP served as PNG
        ("cover-grey.gif", "application/octet-stream", "Grey Ramp"), // wrong: generic binary
        ("cover-ramp.jpg", "text/html", "Ramp"),                     // wrong: JPEG served as HTML
        ("error-503.html", "image/jpeg", "Unavailable"),             // an error page served as an image
    ]

    func run() async throws {
        try await reportingErrors {
            var configuration = try global.configuration()
            if global.cacheDir == nil {
                configuration.cache.directory = FileManager.default.temporaryDirectory
                    .appendingPathComponent("artcache-demo-\(getpid())").path
            }
            guard let folder = Bundle.module.url(forResource: "Demo", withExtension: nil) else {
                throw ValidationError("the bundled example is missing from this build")
            }
            let origin = try await OriginServer.start()
            defer { origin.stop() }
            // The demo's own origin is on loopback, which is refused by
            // default: allow exactly that address, nothing else.
            if let own = IPNetwork("127.0.0.1/32"), !configuration.download.allowedNetworks.contains(own) {
                configuration.download.allowedNetworks.append(own)
            }
            var results: [[String: Any]] = []
            for (index, sample) in Self.samples.enumerated() {
                let body = try Data(contentsOf: folder.appendingPathComponent(sample.file))
                origin.register(sample.file, .init(body: body, contentType: sample.declared,
                                                   cacheControl: "max-age=3600", etag: "\"\(sample.file)-v1\""))
                results.append(["wrapperType": "track", "trackId": 1000 + index, "trackName": sample.title,
                                "artistName": "artcache demo", "artworkUrl100": origin.url("/img/\(sample.file)")])
            }
            let resultSet = try JSONSerialization.data(withJSONObject: ["resultCount": results.count, "results": results])
            let urls = try ResultSet.parse(resultSet).urls
            print("origin      \(origin.baseURL) (loopback, bundled samples)")
            print("result set  iTunes search, \(urls.count) artwork URLs")
            print("cache       \(configuration.cache.directory)\n")

            try await global.withPipeline(configuration) { pipeline in
                let sizes = configuration.thumbnails.sizes
                let first = await pipeline.prefetch(urls, concurrency: configuration.download.concurrency, variants: sizes)
                print("first prefetch:")
                print(PrefetchCommand.text(first.summary))
                for item in first.items {
                    if case .failure(let error) = item.outcome { print("  \(error.reason): \(error.message)") }
                }
                let second = await pipeline.prefetch(urls, concurrency: configuration.download.concurrency, variants: sizes)
                print("\nsecond prefetch (fresh items come from the cache; the refused page is asked for again):")
                print("cached \(second.summary.cached) of \(second.summary.requested), origin requests in total \(origin.totalRequests)")
                if let spec = sizes.first ?? configuration.thumbnails.spec(size: "100x100") {
                    let sheet = configuration.cache.directory + "/contact-sheet.png"
                    try Output.write(try await PrefetchCommand.contactSheet(first.items, pipeline: pipeline, spec: spec), to: sheet)
                    print("contact sheet \(sheet)")
                }
                print("")
                print(StatsCommand.text(try await pipeline.stats()))
            }
        }
    }
}
