import ArgumentParser
import ArtCache
import Fronts
import Foundation
import Hummingbird
import Logging

/// `artcache-fronts`: the iTunes, GitHub and Twitter fronts with artcache as their image layer.
@main
struct FrontsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "artcache-fronts",
        abstract: "Serve the iTunes, GitHub repository/user and Twitter fronts, with artcache as their image layer.",
        discussion: "Settings of the image layer come from cache.conf / ARTCACHE_* like the artcache CLI.")

    @Option(help: "HOST:PORT to listen on.") var listen = "127.0.0.1:8090"
    @Option(name: .customLong("cache-dir"), help: "Cache directory (default [cache] directory).") var cacheDir: String?
    @Option(name: .customLong("itunes-api"), help: "iTunes Search API root.") var itunesAPI = "https://itunes.apple.com"
    @Option(name: .customLong("github-api"), help: "GitHub API root.") var githubAPI = "https://api.github.com"
    @Option(name: .customLong("twitter-api"), help: "Twitter API root.") var twitterAPI = "https://api.twitter.com"
    @Option(help: "inprocess (this process's ImagePipeline) or service (signed artcache serve URLs).") var images = "inprocess"
    @Option(name: .customLong("service-url"), help: "The artcache serve base URL (with --images service).") var serviceURL: String?

    func run() async throws {
        var configuration = try Configuration.load(path: Configuration.locate(explicitPath: nil, environment: ProcessInfo.processInfo.environment))
        if let cacheDir { configuration.cache.directory = URL(fileURLWithPath: cacheDir).standardizedFileURL.path }
        guard let listen = ServiceSettings.parseListen(listen) else { throw ValidationError("--listen: expected HOST:PORT") }
        var options = FrontsOptions()
        options.host = listen.host
        options.port = listen.port
        options.itunesAPI = itunesAPI.trimmingCharacters(in: ["/"])
        options.githubAPI = githubAPI.trimmingCharacters(in: ["/"])
        options.twitterAPI = twitterAPI.trimmingCharacters(in: ["/"])
        switch images {
        case "inprocess": options.images = .inProcess
        case "service":
            guard let serviceURL else { throw ValidationError("--images service needs --service-url") }
            let signer = ServiceURLSigner(settings: configuration.service)
            guard signer.signs || configuration.service.allowUnsigned else {
                throw ValidationError("--images service needs the service's signing key ([service] keys or ARTCACHE_SERVICE_KEYS)")
            }
            options.images = .service(base: serviceURL.trimmingCharacters(in: ["/"]), signer: signer)
        default: throw ValidationError("--images: inprocess or service")
        }
        var logger = Logger(label: "artcache.fronts")
        logger.logLevel = .notice
        let pipeline = try await ImagePipeline.open(configuration: configuration, logger: logger)
        let fronts = Fronts(pipeline: pipeline, options: options, logger: logger)
        let app = buildFrontsApplication(fronts: fronts)
        do {
            try await app.runService()
        } catch {
            do {
                try await pipeline.close()
            } catch let closing {
                logger.error("closing the cache failed", metadata: ["error": "\(closing)"])  // the server's error decides the exit
            }
            throw error
        }
        try await pipeline.close()
    }
}
