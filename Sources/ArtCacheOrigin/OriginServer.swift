import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A loopback HTTP origin (Hummingbird) that serves registered images and
/// misbehaves on purpose. Used by `artcache demo` and by the downloader tests.
///
/// Paths (NAME is a registered resource):
/// - `/img/NAME`: the resource, with its (possibly wrong) Content-Type, an
///   ETag (304 on If-None-Match) and optional Cache-Control
/// - `/status/CODE`: an empty response with that status
/// - `/flaky/N/NAME`: 500 for the first N requests of this path, then the image
/// - `/ratelimit/N/SECONDS/NAME`: 429 with Retry-After for N requests, then the image
/// - `/slow/MS/NAME`: the image, one 256-byte chunk every MS milliseconds
/// - `/hold/MS/NAME`: waits MS milliseconds, then the image (to observe concurrency)
/// - `/truncated/NAME`: declares the full Content-Length, sends half, drops the connection
/// - `/redirect/N/NAME`: a chain of N redirects ending at `/img/NAME`
/// - `/loop`: redirects to itself forever
/// - `/endless`: an image signature followed by an endless body (stops after 1 GiB or 60 s)
/// - `/html200`: an HTML error page with status 200 and Content-Type image/jpeg
public final class OriginServer: Sendable {
    public struct Resource: Sendable {
        public var body: Data
        public var contentType: String?
        public var cacheControl: String?
        public var etag: String?

        public init(body: Data, contentType: String?, cacheControl: String? = nil, etag: String? = nil) {
            self.body = body
            self.contentType = contentType
            self.cacheControl = cacheControl
            self.etag = etag
        }
    }

    struct State {
        var resources: [String: Resource] = [:]
        var requests: [String: Int] = [:]
        var active = 0
        var maxActive = 0
        var activeByHost: [String: Int] = [:]
        var maxActiveByHost: [String: Int] = [:]
        var conditionalHits = 0
    }

    private let state = Mutex(State())
    private let task = Mutex<Task<Void, Never>?>(nil)
    public let port: Int

    /// Starts listening on 127.0.0.1 (port 0 picks a free port).
    public static func start(port: Int = 0, logger: Logger = Logger(label: "artcache.origin")) async throws -> OriginServer {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let box = ServerBox()
        let router = Router()
        installRoutes(router, box: box)  // before Application, which builds its responder at init
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "artcache-origin"),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0); continuation.finish() },
            logger: {
                var quiet = logger
                quiet.logLevel = .critical
                return quiet
            }()
        )
        let running = Task {
            do { try await app.runService(gracefulShutdownSignals: []) } catch { continuation.finish() }
        }
        var bound = 0
        for await value in stream { bound = value }
        guard bound > 0 else {
            running.cancel()
            throw OriginError(message: "origin could not bind 127.0.0.1:\(port)")
        }
        let server = OriginServer(port: bound)
        server.task.withLock { $0 = running }
        box.server.withLock { $0 = server }
        return server
    }

    private init(port: Int) { self.port = port }

    deinit { task.withLock { $0?.cancel() } }

    /// Stops listening.
    public func stop() { task.withLock { $0?.cancel() } }

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public func url(_ path: String) -> String { baseURL + path }

    public func register(_ name: String, _ resource: Resource) {
        state.withLock { $0.resources[name] = resource }
    }

    /// Requests seen for a path (without query).
    public func requestCount(_ path: String) -> Int { state.withLock { $0.requests[path] ?? 0 } }
    public var totalRequests: Int { state.withLock { $0.requests.values.reduce(0, +) } }
    /// Most requests handled at once, over all hosts / for one Host header value.
    public var maxConcurrent: Int { state.withLock { $0.maxActive } }
    public func maxConcurrent(host: String) -> Int { state.withLock { $0.maxActiveByHost[host] ?? 0 } }
    /// 304 answers sent.
    public var notModifiedCount: Int { state.withLock { $0.conditionalHits } }

    public func resetCounters() {
        state.withLock {
            $0.requests = [:]
            $0.maxActive = 0
            $0.maxActiveByHost = [:]
            $0.conditionalHits = 0
        }
    }

    func begin(path: String, host: String) {
        state.withLock { s in
            s.requests[path, default: 0] += 1
            s.active += 1
            s.maxActive = max(s.maxActive, s.active)
            s.activeByHost[host, default: 0] += 1
            s.maxActiveByHost[host] = max(s.maxActiveByHost[host] ?? 0, s.activeByHost[host]!)
        }
    }

    func end(host: String) {
        state.withLock { s in
            s.active -= 1
            s.activeByHost[host, default: 1] -= 1
        }
    }

    func resource(_ name: String) -> Resource? { state.withLock { $0.resources[name] } }
    func noteNotModified() { state.withLock { $0.conditionalHits += 1 } }
}

public struct OriginError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Lets routes (registered before the server object exists) reach it.
final class ServerBox: Sendable {
    let server = Mutex<OriginServer?>(nil)
    var value: OriginServer? { server.withLock { $0 } }
}
