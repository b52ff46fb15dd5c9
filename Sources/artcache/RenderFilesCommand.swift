import ArgumentParser
import ArtCache
import Foundation

/// Renders local files in-process (no cache, no network): to check what the
/// renderer makes of a file, and for the thumbnail throughput benchmark.
struct RenderFilesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render-files", abstract: "Render local image files in-process (diagnostics, benchmarks).",
        shouldDisplay: false)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "Image files.") var files: [String]
    @Option(help: "Bounding box WIDTHxHEIGHT.") var size = "100x100"
    @Option(help: "Output format.") var format: VariantSpec.Format?
    @Option(help: "Render every file this many times.") var repeats = 1
    @Option(help: "Renders at once (default: [thumbnails] concurrency, 0 = cores).") var workers: Int?
    @Flag(help: "Print only the total and the rate.") var quiet = false

    func run() async throws {
        try await reportingErrors {
            var configuration = try global.configuration()
            if let workers { configuration.thumbnails.concurrency = workers }
            guard let spec = configuration.thumbnails.spec(size: size, format: format) else {
                throw ValidationError("--size must be WIDTHxHEIGHT")
            }
            let renderer = try Renderer(settings: configuration.thumbnails)
            let inputs = try files.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
            let started = Date()
            let results = await withTaskGroup(of: (Int, String).self) { group in
                for round in 0..<max(1, repeats) {
                    for (index, data) in inputs.enumerated() {
                        group.addTask {
                            do {
                                let image = try await renderer.render(data, spec: spec)
                                return (round == 0 ? index : -1, "ok \(image.width)x\(image.height) \(image.format.rawValue) \(image.data.count) bytes")
                            } catch {
                                return (round == 0 ? index : -1, "error \(error)")
                            }
                        }
                    }
                }
                var lines = [String](repeating: "", count: inputs.count)
                for await (index, line) in group where index >= 0 { lines[index] = line }
                return lines
            }
            let seconds = Date().timeIntervalSince(started)
            if !quiet { for (file, line) in zip(files, results) { print("\(file): \(line)") } }
            let count = inputs.count * max(1, repeats)
            print(String(format: "%d renders in %.3f s: %.1f img/s", count, seconds, Double(count) / seconds))
        }
    }
}
