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
            let (outcome, path) = try await global.withStore(configuration) { store in
                let outcome = try await global.pipeline(configuration, store: store).original(url)
                return (outcome, outcome.entry.map { store.path(of: $0) })
            }
            if json {
                let entry = outcome.entry
                print(try Output.json(Info(
                    url: entry?.url ?? url, key: entry?.key ?? "", path: path,
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
