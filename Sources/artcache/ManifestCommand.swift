import ArgumentParser
import ArtCacheCore
import ArtCacheRender
import ArtCacheResultSets
import ArtCacheServiceGrammar
import Foundation

struct ManifestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "manifest",
        abstract: "Print what a page needs to lay out a result set's images: per item its status, size, placeholder and thumbnail references.",
        discussion: """
            FILE is a result set (the formats prefetch reads; "-" reads stdin). Nothing is downloaded: \
            items not in the cache are "pending". With --sign, thumbnail references are service paths \
            signed with the first [service] key; else request descriptors (url, size, fit). \
            --json prints the manifest (docs/commands.md, "manifest --json"; the placeholders: docs/placeholders.md).
            """)

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }
    @Argument(help: "A result set file, or - for stdin.") var file: String
    @Option(help: "Display sizes, comma-separated (default: [thumbnails] sizes).") var sizes: String?
    @Option(help: "Force the result-set format: itunes, github-users, github-repos, twitter, urls.") var format: ResultSetFormat?
    @Flag(help: "Signed service paths as thumbnail references.") var sign = false
    @Flag(help: "Print the manifest as JSON.") var json = false

    func validate() throws {
        _ = try Self.sizes(sizes, default: [])  // bad usage (exit 64), before anything opens
    }

    func run() async throws {
        try await reportingErrors(json: json) {
            let configuration = try sign ? global.signingConfiguration() : global.configuration()
            let displaySizes = try Self.sizes(sizes, default: configuration.thumbnails.sizes)
            let resultSet = try PrefetchCommand.load(file, format: format)
            var signer: ServiceURLSigner?
            if sign {
                signer = ServiceURLSigner(settings: configuration.service)
                guard signer?.signs == true else {
                    throw ArtCacheError(.configuration, "service.keys: --sign needs a signing key (set [service] keys, ARTCACHE_SERVICE_KEYS or $CREDENTIALS_DIRECTORY/keys)")
                }
            }
            let manifest = try await global.withPipeline(configuration, readOnly: true) {
                try await $0.manifest(for: resultSet, sizes: displaySizes, signer: signer)
            }
            if json {
                FileHandle.standardOutput.write(try manifest.json() + Data("\n".utf8))
                return
            }
            for item in manifest.items {
                let size = item.width.map { "\($0)x\(item.height ?? 0)" } ?? "-"
                let status = item.status.rawValue + (item.reason.map { " (\($0))" } ?? "")
                print([String(item.index), status, size, item.color ?? "-", item.id ?? "-", item.url].joined(separator: "\t"))
            }
            let counts = Dictionary(grouping: manifest.items, by: \.status).mapValues(\.count)
            print("\(manifest.items.count) items: \(counts[.cached] ?? 0) cached, \(counts[.pending] ?? 0) pending, \(counts[.failed] ?? 0) failed")
        }
    }

    /// `100x100,300x300` → sizes; none given: the configured thumbnail sizes.
    static func sizes(_ text: String?, default configured: [VariantSpec]) throws -> [ImageSize] {
        guard let text else { return configured.map { ImageSize(width: $0.width, height: $0.height) } }
        guard !text.isEmpty else { throw ValidationError("--sizes: give at least one WIDTHxHEIGHT") }
        return try text.split(separator: ",", omittingEmptySubsequences: false).map { part in
            guard let size = ImageSize(String(part)) else {
                throw ValidationError("--sizes: \"\(part)\" is not WIDTHxHEIGHT (each side 1 to \(ImageSize.maxSide))")
            }
            return size
        }
    }
}
