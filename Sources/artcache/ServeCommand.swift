import ArgumentParser
import ArtCacheCore
import ArtCachePipeline
import ArtCacheServer
import ArtCacheServiceGrammar
import Foundation
import Logging

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the thumbnail HTTP service (signed URLs; see `artcache sign`).",
        discussion: """
            GET /{signature}/{options}/{base64url source URL}, GET /health, GET /metrics. \
            Signing keys come from \(ServiceSettings.keysOrder); a keys credential that is \
            unreadable or holds no key stops serve at start. \
            SIGTERM or SIGINT stops accepting, finishes in-flight requests and closes the cache. \
            The URL grammar, responses and metrics: docs/http-api.md; as a systemd service: docs/operations.md.
            """)

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }

    @Option(help: "HOST:PORT to listen on (overrides [service] listen; port 0 picks a free one).")
    var listen: String?

    func validate() throws {
        if let listen { _ = try Arguments.listen(listen) }
    }

    func run() async throws {
        try await reportingErrors {
            var configuration = try global.signingConfiguration()
            if let listen {
                let parsed = try Arguments.listen(listen)
                configuration.service.host = parsed.host
                configuration.service.port = parsed.port
            }
            // The open-file limit raised to the hard one, max_connections fitted under it.
            let descriptors = DescriptorLimit.fit(&configuration.service, downloads: configuration.download.concurrency)
            if let warning = descriptors.warning { Output.warning(warning) }
            // The service's log (its access log included) is formatted and
            // written on a thread of its own, never on the request path.
            let writer = LogWriter()
            do {
                try await serve(configuration, writer: writer)
            } catch {
                _ = try? await Blocking.run { writer.stop() }  // what is queued is written before the error
                throw error
            }
            _ = try? await Blocking.run { writer.stop() }  // and before the process ends
        }
    }

    private func serve(_ configuration: Configuration, writer: LogWriter) async throws {
        var logger = Logger(label: "artcache.serve") { BufferedLogHandler(label: $0, writer: writer) }
        logger.logLevel = global.verbose ? .debug : .info
        let pipeline = try await ImagePipeline.open(configuration: configuration, logger: logger)
        do {
            let directory = configuration.cache.directory
            try await runThumbnailService(pipeline: pipeline, logger: logger, logWriter: writer) { host, port in
                let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
                // One line on stdout, written at once (a pipe reader waits for it).
                FileHandle.standardOutput.write(Data("artcache: serving \(directory) on http://\(authority)\n".utf8))
            }
        } catch {
            do {
                try await pipeline.close()  // closing twice is harmless
            } catch let closing {
                Output.error("\(closing)")  // reported, but the service's own error decides the exit
            }
            throw error
        }
    }
}
