import ArtCacheCore
import ArtCachePipeline
import ArtCacheRender
import ArtCacheServiceGrammar
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// The thumbnail service's request handling: URL grammar and signature,
/// options and presets, negotiation, admission and deadline, the pipeline
/// call, caching headers and error statuses. HTTP in, `ImageRequest` to the
/// pipeline, `ImageResponse` back out as HTTP.
public final class ThumbnailService: Sendable {
    public let pipeline: ImagePipeline
    let settings: ServiceSettings
    let presets: [String: ThumbnailOptions]
    let signer: ServiceURLSigner
    let admission: Admission
    let metrics: ServiceMetrics
    let fallback: Fallback
    let avif: Bool
    /// `f=auto`'s formats per (accepted formats, size): the format policy, remembered.
    let formats: FormatPolicy.Memo
    /// `Accept` headers already parsed.
    let accepts = Negotiation.Memo()
    let cancelOnDisconnect: Bool
    let logger: Logger
    /// Valid paths already parsed and verified (bounded; emptied when full).
    let parsedPaths = BoundedMemo<String, ParsedPath>(capacity: 4096)
    /// `/health`'s check, run at most once per `healthMaxAge`.
    let health: HealthCheck
    /// Where `logger` writes when `serve` runs it (its drops are counted in /metrics).
    let logWriter: LogWriter?
    /// Memory hits answered from the connection's bytes (``RawHitHandler``).
    let channelHits = Atomic<Int>(0)
    /// Memory hits by path and `Accept` (``HitRoute``), with their answers
    /// built once: the next hit of the same request is answered without
    /// building its headers and body again and, when the hit was final,
    /// without parsing, negotiating or looking up again (bounded; emptied
    /// when full). A route holds its answer and, when final, its image
    /// (kept answers only: each at most ``preparedBodyMax``), so at most
    /// 32 MiB in all, routes whose image has left the tier included until
    /// they are asked again or the memo starts over.
    let hitRoutes = BoundedMemo<HitRoute.Key, HitRoute>(capacity: ThumbnailService.preparedCountMax)
    /// The open connections' watches (``ConnectionGuard``), by channel: a
    /// request finds its connection's here, to be cancelled when it closes.
    let connections = Locked<[ObjectIdentifier: ConnectionWatch]>([:])
    /// `Date`, formatted once per second (shared by every connection).
    static let dateHeader = DateHeader()

    /// What failed images answer with.
    enum Fallback: Sendable {
        case none
        case placeholder
        case image(Data, contentType: String)
    }

    /// Checks the service settings of `pipeline.configuration`: signing keys
    /// (or unsigned access, on loopback only) and the fallback image.
    /// `cancelOnDisconnect`: a client closing its connection cancels its
    /// request (off only for in-memory router tests, which have no connection).
    public convenience init(pipeline: ImagePipeline, logger: Logger, cancelOnDisconnect: Bool = true) async throws(ArtCacheError) {
        try await self.init(pipeline: pipeline, logger: logger, cancelOnDisconnect: cancelOnDisconnect, healthMaxAge: .seconds(2))
    }

    /// `healthMaxAge`: how old `/health`'s answer may be (tests: zero, a new
    /// check each time); `logWriter`: the writer behind `logger`, if any.
    package init(pipeline: ImagePipeline, logger: Logger, cancelOnDisconnect: Bool,
                 healthMaxAge: Duration, logWriter: LogWriter? = nil) async throws(ArtCacheError) {
        let configuration = pipeline.configuration
        settings = configuration.service
        presets = configuration.presets
        signer = ServiceURLSigner(settings: settings)
        if settings.allowUnsigned, !settings.isLoopback {
            throw ArtCacheError(.configuration, "service.allow_unsigned: refused because the listener \(settings.listen) is not loopback; "
                                + "unsigned URLs would let anyone use this service to fetch any URL")
        }
        if settings.keys.isEmpty, !settings.allowUnsigned {
            throw ArtCacheError(.configuration, "service.keys: signing is required; set [service] keys (e.g. `openssl rand -hex 32`), "
                                + "or allow_unsigned = true on a loopback listener")
        }
        switch settings.fallback {
        case "": fallback = .none
        case "placeholder": fallback = .placeholder
        case let path:
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ArtCacheError(.configuration, "service.fallback: cannot read \(path)")
            }
            let sniffed = Sniffer.sniff(data)
            guard sniffed.format.isImage else {
                throw ArtCacheError(.configuration, "service.fallback: \(path) is not an image (\(sniffed.mimeType))")
            }
            fallback = .image(data, contentType: sniffed.mimeType)
        }
        let metrics = ServiceMetrics(backgroundKinds: pipeline.background.kinds)
        self.metrics = metrics
        // The pipeline's stages (download, sniff_hash, render, store_commit) into /metrics.
        pipeline.stages.observe { stage, nanoseconds in metrics.stage(stage, nanoseconds: nanoseconds) }
        // Jobs behind the answers (revalidations, placeholders, warm-ups...) into /metrics.
        pipeline.background.observe { kind, nanoseconds in metrics.background(kind, nanoseconds: nanoseconds) }
        admission = Admission(maxInflight: settings.maxInflight, queue: settings.queue, onShed: { metrics.shed(priority: $0) })
        avif = await pipeline.canEncode(.avif)
        let jxl = settings.jxl != .off ? await pipeline.canEncode(.jxl) : false
        formats = FormatPolicy.Memo(FormatPolicy(avif: settings.avif, webp: settings.webp, avifEncodes: avif, jxl: settings.jxl,
                                                 jxlEncodes: jxl))
        self.pipeline = pipeline
        self.cancelOnDisconnect = cancelOnDisconnect
        self.logger = logger
        self.logWriter = logWriter
        health = HealthCheck(maxAge: healthMaxAge) { () async -> Result<Void, ArtCacheError> in
            do throws(ArtCacheError) {
                try await pipeline.checkHealth()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
    }

    // MARK: Image route

    /// `GET /{signature}/{options}/{source}`, and `HEAD` of it (the same
    /// status and headers, `Content-Length` included, without the body).
    func image(_ request: Request, context: ServiceRequestContext) async -> Response {
        let started = ContinuousClock.now
        var (response, tier) = await answer(request, context: context)
        if request.method == .head { response = response.createHeadResponse() }
        record(request, response, tier: tier, since: started)
        return response
    }

    private func answer(_ request: Request, context: ServiceRequestContext) async -> (Response, String) {
        if let refusal = Self.unexpectedQuery(request) { return (failure(refusal), "refused") }
        // Hits from memory: no queue, no copy beyond the response buffer.
        switch memoryAnswer(path: request.uri.path, accept: request.headers[.accept],
                            saveData: Negotiation.savesData(request.headers[.saveData]), ifNoneMatch: request.headers[.ifNoneMatch]) {
        case .refused(let refusal):
            return (failure(refusal), "refused")
        case .hit(let prepared):
            metrics.served(tier: "memory")
            return (response(prepared, answering: ContinuousClock.now), "memory")
        case .miss(let parsed):
            return await miss(parsed, request: request, connection: watch(context))
        }
    }

    /// What cancels a request when its client leaves: its connection's
    /// watch (one already closed when the connection is gone); nil without
    /// a connection or with `cancelOnDisconnect` off.
    func watch(_ context: ServiceRequestContext) -> ConnectionWatch? {
        guard cancelOnDisconnect, let channel = context.channel else { return nil }
        return connections.withLock { $0[ObjectIdentifier(channel)] } ?? (channel.isActive ? nil : .closed)
    }

    /// The access log's `source` (swift-log would derive it from `#fileID`
    /// at every call, parsing a string per request).
    static let logSource = "ArtCacheServer"

    /// Not in memory: admission, deadline, disk, then the network.
    private func miss(_ parsed: Negotiated, request: Request, connection: ConnectionWatch?) async -> (Response, String) {
        do {
            let pipeline = self.pipeline
            let (imageRequest, better) = (parsed.request, parsed.better)
            let negotiated = try await guarded(priority: imageRequest.priority, connection: connection, timed: true) {
                try await pipeline.negotiatedImage(imageRequest, better: better)
            }
            let image = negotiated.response
            let answering = ContinuousClock.now
            let tier = image.source == .placeholder ? "placeholder" : image.source.rawValue
            metrics.served(tier: tier)
            return (success(image, request: request, negotiated: parsed.negotiated, signed: parsed.signed,
                            lifetime: negotiated.lifetime, answering: answering), tier)
        } catch let error as ServiceFailure {
            return (failure(error), "refused")
        } catch let error as ArtCacheError {
            if case .image(let data, let type) = fallback, error.code != .cancelled {
                metrics.refused(reason: error.reason)
                metrics.served(tier: "fallback")
                return (fallbackResponse(data, contentType: type, reason: error.reason), "fallback")
            }
            return (failure(ServiceFailure(error)), "error")
        } catch is CancellationError {
            return (failure(ServiceFailure(ArtCacheError(.cancelled, "the client went away"))), "error")
        } catch {
            logger.error("unexpected failure", metadata: ["error": "\(error)"])
            return (failure(ServiceFailure(status: .internalServerError, reason: "internal")), "error")
        }
    }

    /// What a valid path names, before negotiation.
    struct ParsedPath: Sendable {
        var request: ImageRequest
        /// `f=auto`: the format comes from `Accept`.
        var negotiable: Bool
        var signed: Bool
    }

    /// A request as parsed and negotiated: for `f=auto`, its format is the
    /// cold answer's and `better` the one encoded behind it (``FormatPolicy``).
    struct Negotiated: Sendable {
        var request: ImageRequest
        var negotiated: Bool
        var signed: Bool
        var better: VariantSpec.Format?
    }

    /// The request a path names, signature checked, format negotiated;
    /// failures are typed. `saveData` (`Save-Data: on`): a negotiated
    /// request is made at `[thumbnails] save_data_quality` when it asked for
    /// more (its format is still the one `Accept` gets).
    func parse(path: String, accept: String?, saveData: Bool = false) throws(ServiceFailure) -> Negotiated {
        let parsed: ParsedPath
        if let known = parsedPaths[path] {
            parsed = known
        } else {
            parsed = try parseUncached(path: path)
            parsedPaths.store(parsed, for: path)
        }
        var request = parsed.request
        guard parsed.negotiable, let size = request.size else {
            return Negotiated(request: request, negotiated: false, signed: parsed.signed, better: nil)
        }
        let accepted = accepts.accepted(accept)
        let choice = formats.choice(accepted, size: size)
        request.format = choice.cold
        if saveData {
            let thumbnails = pipeline.configuration.thumbnails
            request.quality = min(request.quality ?? thumbnails.quality, thumbnails.saveDataQuality)
        }
        // An animated source stays animated for a client that takes WebP (ImagePipeline+Animation).
        if accepted.contains(.webp), settings.webp != .off { request.animatedFormat = .webp }
        return Negotiated(request: request, negotiated: true, signed: parsed.signed, better: choice.better)
    }

    /// Grammar, signature, source and options of a path (only valid paths are remembered).
    private func parseUncached(path: String) throws(ServiceFailure) -> ParsedPath {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 4, segments[0].isEmpty else { throw .notFound }
        let signature = String(segments[1])
        let signed = try verify(signature: signature, rest: "/\(segments[2])/\(segments[3])")
        guard let source = ServiceURLSigner.decodeSource(String(segments[3])) else { throw .badSource }
        let options: ThumbnailOptions
        do throws(ArtCacheError) {
            options = try ThumbnailOptions(parsing: String(segments[2])).resolved(presets: presets)
            let maxOutput = pipeline.configuration.thumbnails.maxOutput
            if let size = options.size, size.width > maxOutput || size.height > maxOutput {
                throw ArtCacheError(.invalidRequest, "size \(size) is larger than thumbnails.max_output (\(maxOutput))")
            }
        } catch {
            throw ServiceFailure(status: .badRequest, reason: "invalid_options", detail: error.message)
        }
        let negotiable = options.size != nil && (options.format ?? pipeline.configuration.thumbnails.format) == .auto
        let placeholder: ImageRequest.Options = fallback.isPlaceholder ? [.placeholderOnFailure] : []
        // The class only from a signed path: unsigned, anyone could ask for high.
        let priority = signed ? (options.priority ?? .normal) : .normal
        return ParsedPath(request: options.request(url: source, priority: priority, options: placeholder),
                          negotiable: negotiable, signed: signed)
    }

    /// Checks a path's signature over `rest` (the path after it): true when
    /// signed, false for the unsigned marker (only with `allow_unsigned`).
    func verify(signature: String, rest: String) throws(ServiceFailure) -> Bool {
        if signature == ServiceURLSigner.unsignedMarker {
            guard settings.allowUnsigned else { throw .unsignedRefused }
            return false
        }
        guard signer.isValid(signature: signature, for: rest) else { throw .badSignature }
        return true
    }

    /// Runs one request under one admission slot, queued and shed by its
    /// priority (429 when full, or shed for a higher class) and one
    /// per-request deadline (503), queueing included: for an image, one
    /// pass through the pipeline (memory, disk, network; one lookup, one
    /// flight, one hit or miss counted); for a manifest, reading its body
    /// too. When `connection` closes first (the client left), the request
    /// is cancelled, queued or running — its origin transfer too. The
    /// connection is watched (``ConnectionWatch``), never read: a
    /// keep-alive client keeps its connection after a cold image.
    /// `timed`: the wait for a slot goes to the `admission` stage (images).
    func guarded<T: Sendable>(priority: ImagePriority = .normal, connection: ConnectionWatch?, timed: Bool = false,
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let admission = self.admission
        let metrics = self.metrics
        let timeout = settings.timeout
        let admitted: @Sendable () async throws -> T = {
            do {
                let arrived = ContinuousClock.now
                return try await admission.run(priority: priority) {
                    if timed { metrics.stage(.admission, since: arrived) }
                    return try await body()
                }
            } catch Admission.Refusal.overloaded {
                throw ServiceFailure.overloaded
            } catch Admission.Refusal.cancelled {
                throw ArtCacheError(.cancelled, "request cancelled while queued")
            }
        }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                // Work this request leaves at its deadline, or when its
                // client goes away, is finished behind it (`orphaned_flight`).
                try await Orphans.$finish.withValue(true) {
                    guard let connection else { return try await admitted() }
                    return try await Self.cancelled(onClose: connection, admitted)
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw deadlineFailure }
            return value
        }
    }

    /// 503 `service_timeout` at the request's deadline. What the request
    /// left is finished behind it (`orphaned_flight`), bounded by its
    /// transfer's own deadline (`[download] timeout`, from about when the
    /// request began): `Retry-After` says when that is, at least 1 s.
    var deadlineFailure: ServiceFailure {
        let left = pipeline.configuration.download.timeout - settings.timeout
        return ServiceFailure(status: .serviceUnavailable, reason: "service_timeout", retryAfter: max(1, Int(left.rounded(.up))))
    }

    /// Runs `body`, cancelled if `connection` closes before it ends. The
    /// cancel handler is registered with the connection only while `body`
    /// runs: nothing of a finished request stays on a keep-alive connection.
    static func cancelled<T: Sendable>(onClose connection: ConnectionWatch,
                                       _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let work = Task { try await body() }
        guard let id = connection.register({ work.cancel() }) else {
            work.cancel()
            return try await work.value
        }
        defer { connection.remove(id) }
        return try await withTaskCancellationHandler { try await work.value } onCancel: { work.cancel() }
    }
}

/// Hummingbird's basic context plus the connection's channel (its
/// ``ConnectionWatch`` cancels a request whose client left).
struct ServiceRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection; nil when the application is run without one.
    let channel: (any Channel)?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

extension ThumbnailService.Fallback {
    var isPlaceholder: Bool { if case .placeholder = self { true } else { false } }
}

extension HTTPField.Name {
    static let artcacheError = HTTPField.Name("X-ArtCache-Error")!
    static let artcacheSource = HTTPField.Name("X-ArtCache-Source")!
    /// An animated source answered with its first frame past the limits: `frames`.
    static let artcacheStill = HTTPField.Name("X-ArtCache-Still")!
    /// An answer kept nowhere (`Cache-Control: no-store`), and why: `undersized`, `no-store`.
    static let artcacheNotKept = HTTPField.Name("X-ArtCache-Not-Kept")!
    /// A browser in data-saver mode sends `Save-Data: on`.
    static let saveData = HTTPField.Name("Save-Data")!
}
