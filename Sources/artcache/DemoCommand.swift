import ArgumentParser
import ArtCache
import Foundation

/// Runs the main job on the bundled example, offline.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Cache the bundled example images (some with wrong Content-Types, one HTML error page) and show the stats.")

    @OptionGroup var global: GlobalOptions

    /// Sample body, the Content-Type a misconfigured origin sends with it.
    static let samples: [(file: String, declared: String)] = [
        ("cover-zone.jpg", "image/jpeg"),
        ("cover-sines.png", "image/png"),
        ("cover-eye.webp", "image/png"),                 // wrong: WebP served as PNG
        ("cover-grey.gif", "application/octet-stream"),  // wrong: generic binary
        ("cover-ramp.jpg", "text/html"),                 // wrong: JPEG served as HTML
        ("error-503.html", "image/jpeg"),                // an error page served as an image
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
            let store = try await global.openStore(configuration)
            print("demo cache: \(configuration.cache.directory)")
            for sample in Self.samples {
                let data = try Data(contentsOf: folder.appendingPathComponent(sample.file))
                let url = "https://demo.artcache.invalid/art/\(sample.file)"
                do {
                    let stored = try await store.put(url: url, data: data, declaredType: sample.declared)
                    let note = stored.repaired ? "  (repaired: declared \(sample.declared))" : ""
                    print("stored   \(sample.file): \(stored.entry.contentType), \(data.count) bytes\(note)")
                } catch let error as StoreError where error.code == .notAnImage {
                    print("refused  \(sample.file): \(error.message)")
                }
            }
            _ = try await store.lookup(url: "https://demo.artcache.invalid/art/cover-zone.jpg")
            _ = try await store.lookup(url: "https://demo.artcache.invalid/art/not-cached.jpg")
            print("")
            print(StatsCommand.text(try await store.stats()))
            try await store.close()
        }
    }
}
