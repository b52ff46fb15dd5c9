import ArtCache
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// How a front shows images.
public enum ImageMode: Sendable {
    /// Through this process's `ImagePipeline`, at the front's own `/image` route (the embedding case).
    case inProcess
    /// Through signed URLs of an `artcache serve` at `base` (the service case).
    case service(base: String, signer: ServiceURLSigner)
}

/// Where the fronts listen, which APIs they call and how they show images.
public struct FrontsOptions: Sendable {
    public var host = "127.0.0.1"
    public var port = 8090
    public var itunesAPI = "https://itunes.apple.com"
    public var githubAPI = "https://api.github.com"
    public var twitterAPI = "https://api.twitter.com"
    public var images: ImageMode = .inProcess
    /// The side of the square thumbnails shown, in CSS pixels (2× is asked for high-DPI).
    public var side = 64
    /// The rows a page shows before any scrolling (about 77 CSS pixels each
    /// below a ~150 px header: 8 fill an 800 px window): their images are
    /// asked for at high priority, the rest's (and every prefetch) at low —
    /// `pri=high` / `pri=low` in the service's signed paths, `pri=` of the
    /// `/image` route in process.
    public var visibleRows = 8

    public init() {}
}

/// The four fronts over one pipeline: each calls its API, prefetches the
/// result set's artwork at low priority as soon as the API answers, and
/// renders `<img>` tags the browser then asks for: the visible rows' at
/// high priority, the rest's at low (``FrontsOptions/visibleRows``).
public final class Fronts: Sendable {
    public let pipeline: ImagePipeline
    let options: FrontsOptions
    let api: APIClient
    let prefetcher: ImagePrefetcher
    let logger: Logger
    /// The image URLs of the last GitHub user search: a new query stops their prefetch.
    let lastUsers = Mutex<[String]>([])
    /// A browser dropping an image request (a new query, a page left) cancels
    /// it; off only for in-memory router tests, which have no connection.
    let cancelOnDisconnect: Bool

    public init(pipeline: ImagePipeline, options: FrontsOptions, logger: Logger, cancelOnDisconnect: Bool = true) {
        self.pipeline = pipeline
        self.cancelOnDisconnect = cancelOnDisconnect
        self.options = options
        self.logger = logger
        api = APIClient(directory: pipeline.configuration.cache.directory)
        let settings = pipeline.configuration.thumbnails
        // The variant the pages show, made while the originals arrive: the
        // `/image` route then finds it on disk.
        let shown = VariantSpec(width: options.side, height: options.side, fit: .cover, format: settings.format,
                                quality: settings.quality, background: settings.background)
        prefetcher = ImagePrefetcher(pipeline: pipeline, priority: .low, concurrency: 8, variants: [shown])
    }

    /// One page: the rows from `apiURL` (nil: just the form), laid out from
    /// the manifest of their images: each `<img>` has its box size, a 2×
    /// `srcset` (the provider profile fetches the sharper source), and its
    /// placeholder as its background until the image arrives. What is not
    /// cached yet is prefetched at low priority (by the manifest, and by
    /// this front's prefetcher, which a new GitHub users query stops).
    func page(title: String, form: Pages.Form?, apiURL: String?, empty: String,
              rows parse: (Data) throws -> [FrontRow]) async -> (String, [FrontRow]) {
        guard let apiURL else { return (Pages.page(title: title, form: form, notice: nil, rows: [], empty: ""), []) }
        let rows: [FrontRow]
        var notice: String?
        do {
            let (data, origin) = try await api.get(apiURL)
            rows = try parse(data)
            if origin == .saved { notice = "Offline: showing the results saved when this search last worked." }
        } catch {
            logger.warning("API failed", metadata: ["url": "\(apiURL)", "error": "\(error)"])
            return (Pages.page(title: title, form: form, notice: "The search service could not be reached.", rows: [], empty: empty), [])
        }
        var seen = Set<String>()
        let urls = rows.compactMap(\.imageURL).filter { seen.insert($0).inserted }
        if !urls.isEmpty { _ = prefetcher.start(urls: urls) }
        // The visible rows' images high, the rest low: one manifest each
        // (its signed references carry the class).
        let visible = Set(rows.prefix(options.visibleRows).compactMap(\.imageURL))
        var items: [String: ImageManifest.Item] = [:]
        let side = options.side
        for (priority, group) in [(ImagePriority.high, urls.filter(visible.contains)), (.low, urls.filter { !visible.contains($0) })]
        where !group.isEmpty {
            do {
                let manifest = try await pipeline.manifest(for: ResultSet(format: .urls, urls: group),
                                                           sizes: [ImageSize(width: side, height: side)], fit: .cover,
                                                           signer: signer, priority: priority)
                for item in manifest.items { items[item.url] = item }
            } catch {
                logger.warning("no manifest: boxes without placeholders", metadata: ["error": "\(error)"])
            }
        }
        let html = Pages.page(title: title, form: form, notice: notice, rows: rows.enumerated().map { index, row in
            (row, image(for: row, item: row.imageURL.flatMap { items[$0] }, priority: rowPriority(index)))
        }, empty: empty)
        return (html, rows)
    }

    /// The class of the images of a page's row `index` (0-based): high for
    /// the first ``FrontsOptions/visibleRows``, low below them.
    func rowPriority(_ index: Int) -> ImagePriority {
        index < options.visibleRows ? .high : .low
    }

    /// The service's signer in service mode (the manifest's references are then its signed paths).
    var signer: ServiceURLSigner? {
        if case .service(_, let signer) = options.images { signer } else { nil }
    }

    /// The `<img>` of a row from its manifest item: the shown size at 1× and
    /// 2× (the provider profile picks the source) at `priority`, and its placeholder.
    func image(for row: FrontRow, item: ImageManifest.Item?, priority: ImagePriority) -> Pages.Image? {
        guard let url = row.imageURL else { return nil }
        let side = options.side
        let references = item?.variants["\(side)x\(side)"]
        let one = references?["1x"].flatMap { reference($0, priority: priority) } ?? imageURL(url, side: side, priority: priority)
        let two = references?["2x"].flatMap { reference($0, priority: priority) } ?? imageURL(url, side: side * 2, priority: priority)
        return Pages.Image(url: url, src: one, srcset: "\(two) 2x", side: side, status: item?.status.rawValue ?? "pending",
                           color: item?.color, placeholder: item?.placeholder)
    }

    /// Where the page asks for a manifest reference: the service's signed
    /// path (its class signed in), or this front's `/image` route at
    /// `priority` for a request descriptor.
    func reference(_ reference: ImageManifest.Reference, priority: ImagePriority) -> String? {
        if let path = reference.path, case .service(let base, _) = options.images { return base + path }
        guard let url = reference.url, let size = reference.size?.split(separator: "x").first.flatMap({ Int($0) }) else { return nil }
        return imageURL(url, side: size, priority: priority)
    }

    func imageURL(_ url: String, side: Int, priority: ImagePriority) -> String {
        switch options.images {
        case .inProcess:
            return "/image?src=\(ServiceURLSigner.encodeSource(url))&s=\(side)&pri=\(priority >= .high ? "high" : "low")"
        case .service(let base, let signer):
            return base + signer.path(for: url, options: ThumbnailOptions(size: .init(side), fit: .cover, priority: priority))
        }
    }

    /// `GET /image?src=<base64url>&s=<side>[&pri=low]`: the thumbnail, at
    /// high priority (`pri=low`: low, the rows below the fold); a failure
    /// answers the placeholder (never a broken image).
    func imageResponse(_ request: Request) async -> Response {
        guard let encoded = request.uri.queryParameters.get("src"),
              let url = ServiceURLSigner.decodeSource(encoded),
              let side = request.uri.queryParameters.get("s").flatMap({ Int($0) }), (8...1200).contains(side) else {
            return Response(status: .badRequest, headers: [.contentType: "text/plain"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: "400 invalid image request\n")))
        }
        let priority: ImagePriority = request.uri.queryParameters.get("pri") == "low" ? .low : .high
        let imageRequest = ImageRequest(url: url, width: side, height: side, fit: .cover, priority: priority,
                                        options: [.placeholderOnFailure])
        do {
            let image = try await pipeline.image(imageRequest)
            var headers: HTTPFields = [.contentType: image.contentType]
            headers[.cacheControl] = image.error == nil ? "public, max-age=86400" : "no-store"
            if let error = image.error { headers[HTTPField.Name("X-ArtCache-Error")!] = error.reason }
            headers[HTTPField.Name("X-ArtCache-Source")!] = image.source.rawValue
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: image.data)))
        } catch {
            return Response(status: .serviceUnavailable, headers: [.contentType: "text/plain"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: "503 \(error.reason)\n")))
        }
    }
}

/// The fronts' routes: `/itunes`, `/github/repos`, `/github/users`, `/twitter`, `/image`, `/`.
public func buildFrontsApplication(fronts: Fronts) -> some ApplicationProtocol {
    let router = Router(context: FrontsRequestContext.self)
    let options = fronts.options
    @Sendable func html(_ text: String) -> Response {
        Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                 body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
    @Sendable func query(_ request: Request, _ name: String) -> String {
        // Forms send spaces as "+".
        request.uri.queryParameters.get(name)?.replacingOccurrences(of: "+", with: " ").trimmingCharacters(in: .whitespaces) ?? ""
    }
    @Sendable func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }
    router.get("/") { _, _ in
        html(Pages.page(title: "artcache fronts", form: nil, notice: nil, rows: [], empty: "Pick a front above."))
    }
    router.get("/itunes") { request, _ in
        let term = query(request, "term")
        var entity = query(request, "entity")
        if !["album", "song", "musicVideo"].contains(entity) { entity = "album" }
        let form = Pages.entityForm(term: term, selected: entity)
        let api = term.isEmpty ? nil : "\(options.itunesAPI)/search?term=\(encoded(term))&entity=\(entity)"
        return html(await fronts.page(title: "iTunes search", form: form, apiURL: api, empty: "No music found.",
                                      rows: APIModels.itunesRows).0)
    }
    router.get("/github/repos") { request, _ in
        let q = query(request, "q")
        let api = q.isEmpty ? nil : "\(options.githubAPI)/search/repositories?q=\(encoded(q))"
        return html(await fronts.page(title: "GitHub repositories", form: Pages.searchForm(action: "/github/repos", name: "q", value: q),
                                      apiURL: api, empty: "No repositories found.", rows: APIModels.repoRows).0)
    }
    router.get("/github/users") { request, _ in
        let q = query(request, "q")
        let api = q.isEmpty ? nil : "\(options.githubAPI)/search/users?q=\(encoded(q))"
        // A new query abandons the old list: its prefetch stops (the browser
        // drops the old page's image requests, which cancels them here).
        let previous = fronts.lastUsers.withLock { $0 }
        let (text, rows) = await fronts.page(title: "GitHub users", form: Pages.searchForm(action: "/github/users", name: "q", value: q),
                                             apiURL: api, empty: "No users found.", rows: APIModels.userRows)
        let current = rows.compactMap(\.imageURL)
        let abandoned = previous.filter { !current.contains($0) }
        if !abandoned.isEmpty { fronts.prefetcher.stop(urls: abandoned) }
        fronts.lastUsers.withLock { $0 = current }
        return html(text)
    }
    router.get("/twitter") { _, _ in
        html(await fronts.page(title: "Twitter timeline", form: nil, apiURL: "\(options.twitterAPI)/1.1/statuses/home_timeline.json",
                               empty: "No tweets.", rows: APIModels.timelineRows).0)
    }
    router.get("/image") { request, context in
        guard fronts.cancelOnDisconnect, let channel = context.channel else { return await fronts.imageResponse(request) }
        // The connection is watched through its close future, never read:
        // a browser keeps its keep-alive connection after a cold image.
        return await cancelled(onClose: channel) { await fronts.imageResponse(request) }
    }
    return Application(
        router: router,
        configuration: ApplicationConfiguration(address: .hostname(options.host, port: options.port), serverName: "artcache-fronts"),
        onServerRunning: { channel in
            fronts.logger.notice("fronts listening", metadata: ["port": "\(channel.localAddress?.port ?? options.port)"])
        },
        logger: fronts.logger
    )
}

/// Hummingbird's basic context plus the connection (its close future
/// cancels an image request whose client left).
struct FrontsRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: (any Channel)?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// Runs `body`, cancelled if `channel` closes before it ends. One close
/// callback per connection (``ConnectionRequests``), registered by its first
/// image request: a keep-alive connection's requests leave nothing behind on
/// it when they end.
func cancelled<T: Sendable>(onClose channel: any Channel, _ body: @escaping @Sendable () async -> T) async -> T {
    let work = Task { await body() }
    let requests = ConnectionRequests.of(channel)
    let id = requests.add { work.cancel() }
    defer { requests.remove(id) }
    return await withTaskCancellationHandler { await work.value } onCancel: { work.cancel() }
}

/// The image requests running on one connection, cancelled together when it
/// closes. Kept in ``ConnectionRequests/open`` while the connection is open.
final class ConnectionRequests: Sendable {
    private struct State {
        var next = 0
        var cancels: [Int: @Sendable () -> Void] = [:]
        var closed = false
    }
    private let state = Mutex(State())
    private static let open = Mutex<[ObjectIdentifier: ConnectionRequests]>([:])

    /// The connection's registry, made (and its close callback registered) on first use.
    static func of(_ channel: any Channel) -> ConnectionRequests {
        let id = ObjectIdentifier(channel)
        let (requests, made) = open.withLock { open -> (ConnectionRequests, Bool) in
            if let known = open[id] { return (known, false) }
            let made = ConnectionRequests()
            open[id] = made
            return (made, true)
        }
        if made {
            channel.closeFuture.whenComplete { _ in
                _ = open.withLock { $0.removeValue(forKey: id) }
                requests.close()
            }
        }
        return requests
    }

    /// Adds a request's cancel; a connection already closed cancels it at once.
    func add(_ cancel: @escaping @Sendable () -> Void) -> Int {
        let id = state.withLock { s -> Int? in
            guard !s.closed else { return nil }
            s.next += 1
            s.cancels[s.next] = cancel
            return s.next
        }
        guard let id else { cancel(); return 0 }
        return id
    }

    func remove(_ id: Int) {
        _ = state.withLock { $0.cancels.removeValue(forKey: id) }
    }

    private func close() {
        let cancels = state.withLock { s -> [@Sendable () -> Void] in
            s.closed = true
            defer { s.cancels.removeAll() }
            return Array(s.cancels.values)
        }
        for cancel in cancels { cancel() }
    }
}
