import ArgumentParser
import ArtCachePipeline
import ArtCacheRender
import Foundation

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Fetch one URL through the cache and write the original's bytes.")

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }
    @Argument(help: "The image URL.") var url: String
    @Option(name: .shortAndLong, help: "Write the bytes to FILE (default: stdout).") var output: String?
    @Flag(help: "Print the blob's path and metadata as JSON instead of the bytes.") var json = false

    struct Info: Encodable {
        let url: String
        let key: String
        /// The URL the bytes came from: a provider profile's rendition, else the URL given.
        @Nullable var fetchedUrl: String?
        @Nullable var path: String?
        let source: String
        let contentType: String
        @Nullable var declaredType: String?
        let bytes: Int
        let repaired: Bool
        @Nullable var etag: String?
        @Nullable var lastModified: String?
        @Nullable var expiresAt: Date?
        /// The original's upright pixels and placeholder (`color` `#rrggbb`, `thumbhash` base64).
        @Nullable var width: Int?
        @Nullable var height: Int?
        @Nullable var color: String?
        @Nullable var thumbhash: String?
        /// An animated GIF or WebP original, and its frames (null when its placeholder is not known).
        @Nullable var animated: Bool?
        @Nullable var frames: Int?
    }

    /// A cached original's type was repaired when it was stored: its
    /// declared type disagrees with its bytes by the rule the download
    /// used (``Sniffer/isMismatch(declared:sniffed:)``), so `repaired` says
    /// so on every `get`, not only the first.
    static func repairedWhenStored(_ image: ImageResponse) -> Bool {
        guard image.error == nil, let entry = image.entry, entry.kind == .original else { return false }
        return Sniffer.isMismatch(declared: entry.declaredType, sniffed: Sniffer.sniff(image.data))
    }

    /// The documented `source` values: cached, revalidated, stale, downloaded, uncacheable, tier2.
    static func source(_ image: ImageResponse) -> String {
        switch image.source {
        case .memory, .disk, .placeholder: "cached"
        case .revalidated: "revalidated"
        case .stale: "stale"
        case .tier2: "tier2"
        case .network: image.entry == nil ? "uncacheable" : "downloaded"
        }
    }

    func run() async throws {
        try await reportingErrors(json: json) {
            let configuration = try global.storingConfiguration()
            // Printed before the pipeline closes: a stale answer is out at once,
            // and the revalidation behind it ends before the process does.
            try await global.withPipeline(configuration) { pipeline in
                let image = try await pipeline.image(ImageRequest(url: url, priority: .high))
                // --json shows the size and placeholder: computed now when not yet
                // (bytes that do not decode have none: null, not an error).
                var info = image.info
                if json, info == nil, image.entry != nil {
                    info = try? await pipeline.info(for: url, priority: .high, options: .cacheOnly)
                }
                let path = image.entry.flatMap(pipeline.blobLocation(of:))
                if json {
                    let entry = image.entry
                    print(try Output.json(Info(
                        url: entry?.url ?? url, key: entry?.key ?? "", fetchedUrl: entry.map { $0.fetchedURL ?? $0.url }, path: path,
                        source: Self.source(image), contentType: image.contentType,
                        declaredType: entry?.declaredType, bytes: image.data.count,
                        repaired: image.repaired || Self.repairedWhenStored(image),
                        etag: entry?.etag, lastModified: entry?.lastModified, expiresAt: entry?.expiresAt,
                        width: info?.width ?? (image.width > 0 ? image.width : nil), height: info?.height ?? (image.height > 0 ? image.height : nil),
                        color: info?.color, thumbhash: info?.thumbHashBase64, animated: info?.animated, frames: info?.frames)))
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
