import ArtCacheCore
import ArtCachePipeline
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import ServiceLifecycle
import UnixSignals

/// The thumbnail service as a Hummingbird application: `GET /health`,
/// `GET /metrics`, `GET /{signature}/{options}/{source}`, `POST
/// /v1/manifest` and `GET /v1/info/{signature}/{source}`.
///
/// `onServerRunning` receives the bound host and port (port 0 in the
/// settings picks a free one).
public func buildApplication(
    service: ThumbnailService,
    onServerRunning: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
) -> some ApplicationProtocol {
    // HEAD of every GET route answers as GET without the body.
    let router = Router(context: ServiceRequestContext.self, options: .autoGenerateHeadEndpoints)
    router.get("/health") { _, _ -> Response in
        do throws(ArtCacheError) {
            try await service.health.result().get()
            return Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: "ok\n")))
        } catch {
            service.logger.error("health check failed", metadata: ["error": "\(error)"])
            return Response(status: .serviceUnavailable,
                            headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: "unhealthy: \(error.reason)\n")))
        }
    }
    router.get("/metrics") { _, _ -> Response in
        let text = service.metrics.exposition(activity: service.pipeline.activity, admission: service.admission.load,
                                              logDropped: service.logWriter?.dropped ?? 0,
                                              freshness: service.pipeline.freshnessCounters,
                                              upgrades: service.pipeline.upgradeCounts,
                                              tier2: service.pipeline.tier2?.counters)
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: text)))
    }
    router.post("/v1/manifest") { request, context -> Response in
        await service.manifest(request, context: context)
    }
    router.get("/v1/info/:signature/:source") { request, context -> Response in
        await service.info(request, signature: context.parameters.get("signature") ?? "", source: context.parameters.get("source") ?? "",
                           context: context)
    }
    // Image paths (three segments) skip the router's trie: they are the hot
    // path, and their segments are long. Everything else goes to the router,
    // whose answers and refusals (404, 405) are counted and logged as the
    // images' are.
    let routes = router.buildResponder()
    let responder = CallbackResponder<ServiceRequestContext> { request, context in
        if request.method == .get || request.method == .head,
           request.uri.path.utf8.lazy.filter({ $0 == UInt8(ascii: "/") }).count == 3 {
            return await service.image(request, context: context)
        }
        return await service.routed(request) { try await routes.respond(to: request, context: context) }
    }
    let settings = service.settings
    return Application(
        responder: responder,
        // Per connection: its deadlines and body limits (ConnectionGuard: it
        // sees every request and answer), and memory hits of image paths
        // answered from the connection's bytes (the RawHitHandler it puts in
        // front of the HTTP/1 decoder), before the router. Hummingbird's own
        // idle timeout stays off: it sits behind the memory hits and would
        // take a connection busy with them for an idle one.
        server: .http1(configuration: .init(additionalChannelHandlers: [ConnectionGuard(service: service)])),
        // At most max_connections open: past it, accepting pauses (the rest
        // wait in the kernel's backlog) until one closes, so a flood of idle
        // connections cannot take the descriptors the cache needs.
        configuration: ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: "artcache",
                                                availableConnectionsDelegate: MaximumAvailableConnections(settings.maxConnections,
                                                                                                          logger: service.logger)),
        onServerRunning: { channel in
            await onServerRunning(settings.host, channel.localAddress?.port ?? settings.port)
        },
        logger: service.logger
    )
}

/// Runs the service until SIGTERM or SIGINT: then it stops accepting,
/// lets in-flight requests finish within `[service] shutdown_grace`, and
/// closes the pipeline (flushing access times and counters).
public func runThumbnailService(
    pipeline: ImagePipeline,
    logger: Logger,
    onServerRunning: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
) async throws {
    try await runThumbnailService(pipeline: pipeline, logger: logger, logWriter: nil, onServerRunning: onServerRunning)
}

/// `runThumbnailService` logging through `logWriter` (`artcache serve`:
/// its access log is written off the request path; /metrics counts what
/// the writer dropped).
package func runThumbnailService(
    pipeline: ImagePipeline,
    logger: Logger,
    logWriter: LogWriter?,
    onServerRunning: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
) async throws {
    let service = try await ThumbnailService(pipeline: pipeline, logger: logger, cancelOnDisconnect: true,
                                             healthMaxAge: .seconds(2), logWriter: logWriter)
    let group = makeServiceGroup(service: service, signals: [.sigterm, .sigint], onServerRunning: onServerRunning)
    do {
        try await group.run()
    } catch {
        throw ListenFailure(error, authority: service.settings.listen) ?? error
    }
}

/// The service group `runThumbnailService` runs (exposed so a test can
/// trigger a graceful shutdown itself): the application, and the pipeline's
/// closing after the application has drained.
public func makeServiceGroup(
    service: ThumbnailService,
    signals: [UnixSignal],
    onServerRunning: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
) -> ServiceGroup {
    let app = buildApplication(service: service, onServerRunning: onServerRunning)
    var configuration = ServiceGroupConfiguration(
        services: [.init(service: PipelineCloser(pipeline: service.pipeline, logger: service.logger)), .init(service: app)],
        gracefulShutdownSignals: signals,
        logger: service.logger)
    configuration.maximumGracefulShutdownDuration = .milliseconds(Int64(service.settings.shutdownGrace * 1000))
    return ServiceGroup(configuration: configuration)
}

/// Waits for the graceful shutdown, then closes the pipeline. Services stop
/// in reverse order, so this runs after the application has finished its
/// in-flight requests.
struct PipelineCloser: Service {
    let pipeline: ImagePipeline
    let logger: Logger

    func run() async throws {
        // Only throws when cancelled (another service failed: the listener's
        // bind, said by `serve` in one line): close anyway, quietly then.
        let graceful = (try? await gracefulShutdown()) != nil
        do {
            try await pipeline.close()
            logger.log(level: graceful ? .info : .debug, "cache closed")
        } catch {
            logger.error("closing the cache failed", metadata: ["error": "\(error)"])
            throw error
        }
    }
}
