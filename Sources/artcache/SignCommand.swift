import ArgumentParser
import ArtCache
import ArtCacheServer
import Foundation
import Logging

struct SignCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Print the service path for an image URL, signed with the first [service] key.",
        discussion: """
            Options follow the service's grammar (README, "Thumbnail service"); with none, the original. \
            Keys: \(ServiceSettings.keysOrder) (the package's: sudo env CREDENTIALS_DIRECTORY=/etc/artcache artcache sign URL).
            """)

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }

    @Argument(help: "The source image URL.")
    var url: String

    @Option(help: "Thumbnail box WIDTHxHEIGHT, e.g. 300x300.")
    var size: String?

    @Option(help: "contain, cover or smart.")
    var fit: String?

    @Option(help: "auto, jpeg, webp, png or avif (auto negotiates from Accept).")
    var format: String?

    @Option(help: "Quality 1-100.")
    var quality: Int?

    @Option(help: "A preset from [presets].")
    var preset: String?

    /// `pri=`'s classes.
    enum PriorityClass: String, CaseIterable, ExpressibleByArgument {
        case high, normal, low
    }

    @Option(help: "The request's class, signed with the path (pri=): high, normal or low. The service queues higher classes first and sheds low ones first under overload.")
    var priority: PriorityClass?

    @Option(help: "Print a full URL with this base (e.g. http://127.0.0.1:8080).")
    var base: String?

    func validate() throws {
        if let size {
            _ = try Arguments.box(size)
            guard ImageSize(size) != nil else {
                throw ValidationError("--size \(size): each side must be at most \(ImageSize.maxSide) (the service's bound)")
            }
        }
        try Arguments.quality(quality)
    }

    func run() async throws {
        try await reportingErrors {
            let configuration = try global.signingConfiguration()
            var tokens: [String] = []
            if let size { tokens.append(size) }
            if let fit { tokens.append("fit=\(fit)") }
            if let format { tokens.append("f=\(format)") }
            if let quality { tokens.append("q=\(quality)") }
            if let preset { tokens.append("p=\(preset)") }
            if let priority { tokens.append("pri=\(priority.rawValue)") }
            let options = try ThumbnailOptions(parsing: tokens.isEmpty ? "original" : tokens.joined(separator: ","))
            _ = try options.resolved(presets: configuration.presets)  // an unknown preset fails here, not at request time
            _ = try NormalizedURL(url)
            let signer = ServiceURLSigner(settings: configuration.service)
            guard signer.signs || configuration.service.allowUnsigned else {
                throw ArtCacheError(.configuration, "service.keys: no signing key (set [service] keys, ARTCACHE_SERVICE_KEYS or $CREDENTIALS_DIRECTORY/keys)")
            }
            let path = signer.path(for: url, options: options)
            print((base.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } ?? "") + path)
        }
    }
}
