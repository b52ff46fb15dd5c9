import ArtCacheCore
import ArgumentParser
import ArtCachePipeline
import ArtCacheRender
import Foundation

extension VariantSpec.Fit: ExpressibleByArgument {}
extension VariantSpec.Format: ExpressibleByArgument {}

struct ThumbCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumb",
        abstract: "Make (or reuse) a thumbnail variant of URL, downloading the original if needed.")

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }
    @Argument(help: "The image URL.") var url: String
    @Option(help: "Bounding box WIDTHxHEIGHT, e.g. 100x100.") var size: String
    @Option(help: "contain (fit inside), cover (fill and crop the centre) or smart (crop by attention).")
    var fit: VariantSpec.Fit?
    @Option(help: "auto, jpeg, webp, png or avif.") var format: VariantSpec.Format?
    @Option(help: "Encoder quality, 1-100.") var quality: Int?
    @Option(name: .shortAndLong, help: "Write the thumbnail to FILE (default: stdout unless --json).") var output: String?
    @Flag(help: "Print width, height, format, bytes and the variant's blob path as JSON.") var json = false

    struct Info: Encodable {
        let url: String
        let spec: String
        let source: String
        let width: Int
        let height: Int
        let format: String
        let bytes: Int
        @Nullable var path: String?
    }

    func validate() throws {
        _ = try Arguments.box(size)  // its upper bound is the configuration's: checked in run()
        try Arguments.quality(quality)
    }

    func run() async throws {
        try await reportingErrors(json: json) {
            let configuration = try global.storingConfiguration()
            let thumbnails = configuration.thumbnails
            let box = try Arguments.box(size, maxOutput: thumbnails.maxOutput)
            let spec = VariantSpec(width: box.width, height: box.height, fit: fit ?? thumbnails.fit,
                                   format: format ?? thumbnails.format, quality: quality ?? thumbnails.quality,
                                   background: thumbnails.background)
            let request = ImageRequest(url: url, width: spec.width, height: spec.height, fit: spec.fit, format: spec.format,
                                       quality: spec.quality, priority: .high)
            // Printed before the pipeline closes: a stale answer is out at once,
            // and the revalidation behind it ends before the process does.
            try await global.withPipeline(configuration) { pipeline in
                let image = try await pipeline.image(request)
                let path = image.entry.flatMap(pipeline.blobLocation(of:))
                if json {
                    print(try Output.json(Info(
                        url: url, spec: spec.canonical, source: image.rendered ? "rendered" : image.source == .stale ? "stale" : "cached", width: image.width,
                        height: image.height, format: Sniffer.sniff(image.data).format.rawValue, bytes: image.data.count,
                        path: path)))
                    fflush(nil)  // out now, not when the process ends
                }
                if let output {
                    try Output.write(image.data, to: output)
                } else if !json {
                    FileHandle.standardOutput.write(image.data)
                }
            }
        }
    }
}
