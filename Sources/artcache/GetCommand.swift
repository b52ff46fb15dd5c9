import ArgumentParser
import ArtCache
import Foundation

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Fetch one URL through the cache and write the original's bytes.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The image URL.") var url: String
    @Option(name: .shortAndLong, help: "Write the bytes to FILE (default: stdout).") var output: String?
    @Flag(help: "Print the blob's path and metadata as JSON instead of the bytes.") var json = false

    struct Info: Encodable {
        let url: String
        let key: String
        let path: String?
        let source: String
        let contentType: String
        let declaredType: String?
        let bytes: Int
        let repaired: Bool
        let etag: String?
        let lastModified: String?
        let expiresAt: Date?
    }

    func run() async throws {
        try await reportingErrors {
            let configuration = try global.configuration()
            let store = try await global.openStore(configuration)
            let pipeline = ImagePipeline(store: store, downloader: try Downloader(settings: configuration.download, logger: global.logger),
                                         logger: global.logger)
            let outcome: FetchOutcome
            do {
                outcome = try await pipeline.original(url)
            } catch let error as DownloadError {
                try await store.close()
                Output.error(error.message)
                throw ExitCode(1)
            }
            try await store.close()
            if json {
                let entry = outcome.entry
                print(try Output.json(Info(
                    url: entry?.url ?? url, key: entry?.key ?? "", path: entry.map { store.path(of: $0) },
                    source: outcome.source.rawValue, contentType: entry?.contentType ?? Sniffer.sniff(outcome.data).mimeType,
                    declaredType: entry?.declaredType, bytes: outcome.data.count, repaired: outcome.repaired,
                    etag: entry?.etag, lastModified: entry?.lastModified, expiresAt: entry?.expiresAt)))
            }
            if let output {
                try outcome.data.write(to: URL(fileURLWithPath: output))
            } else if !json {
                FileHandle.standardOutput.write(outcome.data)
            }
        }
    }
}
