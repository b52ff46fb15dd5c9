import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback HTTP/1.1 origin that serves registered images and misbehaves on
/// purpose. Used by `artcache demo` and the downloader tests. It is written on
/// raw sockets because its job is to break the wire in ways an HTTP library
/// will not: cut a body short of its Content-Length, dribble bytes, never end.
///
/// Paths (NAME is a registered resource):
/// - `/img/NAME`: the resource with its (possibly wrong) Content-Type, its
///   ETag (304 on If-None-Match) and Cache-Control
/// - `/status/CODE`: an empty response with that status
/// - `/flaky/N/NAME`: 500 for the first N requests of this path, then the image
/// - `/ratelimit/N/SECONDS/NAME`: 429 with Retry-After for N requests, then the image
/// - `/slow/MS/NAME`: the image, one 256-byte chunk every MS milliseconds
/// - `/hold/MS/NAME`: waits MS milliseconds, then the image
/// - `/gate/NAME`: waits until `openGate()` (at most ``gateLimit``), then the image
/// - `/gate/N/NAME`: waits until N requests for this path (query aside) have
///   arrived, then the image: N requests answered at once, however late each
///   client runs. At most ``gateLimit``: then a 504, so a test whose
///   requests never meet fails instead of hanging
/// - `/truncated/NAME`: declares the full Content-Length, sends half, closes
/// - `/redirect/N/NAME`: a chain of N redirects ending at `/img/NAME`
/// - `/elsewhere/HOST:PORT/NAME`: redirects to `http://HOST:PORT/img/NAME`
///   (HOST:PORT percent-decoded, so `%5B::1%5D:80` gives an IPv6 host)
/// - `/location/LOCATION`: a 302 whose `Location` is LOCATION percent-decoded,
///   byte for byte (any bytes: the redirect-policy tests send odd and broken ones)
/// - `/loop`: redirects to itself
/// - `/endless`: a PNG signature and then bytes until the client leaves (at most 1 GiB or 60 s)
/// - `/html200`: an HTML error page with status 200 and Content-Type image/jpeg
public final class OriginServer: Sendable {
    public struct Resource: Sendable {
        public var body: Data
        public var contentType: String?
        public var cacheControl: String?
        public var etag: String?
        /// 304 answers carry the ETag only (no Cache-Control).
        public var bare304: Bool
        /// Not 200: this status with an empty body (an origin failing behind
        /// a URL that answered before: 503, 404...), with the Cache-Control
        /// and `headers`.
        public var status: Int
        /// More response headers (`Age`, `Date`, `Expires`, `Last-Modified`...),
        /// sent with every answer for this resource.
        public var headers: [String: String] = [:]
        /// Its transfer breaks on every path that serves it as an image:
        /// the full Content-Length declared, half the body sent, the
        /// connection closed (as `/truncated/NAME` does).
        public var cutShort = false

        public init(body: Data, contentType: String?, cacheControl: String? = nil, etag: String? = nil, bare304: Bool = false,
                    status: Int = 200, headers: [String: String] = [:]) {
            self.status = status
            self.headers = headers
            self.body = body
            self.contentType = contentType
            self.cacheControl = cacheControl
            self.etag = etag
            self.bare304 = bare304
        }
    }

    /// A task (`waitFor`) or a connection thread (`block`) waiting for a condition.
    typealias Waiter = (id: Int, condition: @Sendable (State) -> Bool, resume: @Sendable () -> Void)

    struct State {
        var resources: [String: Resource] = [:]
        var requests: [String: Int] = [:]
        var requestLog: [String] = []
        var targetLog: [String] = []
        var gateOpen = false
        var gateLimit: TimeInterval = 30
        var active = 0
        var maxActive = 0
        var activeByHost: [String: Int] = [:]
        /// Connections whose request is counted in `active`, with its Host.
        var answering: [Int32: String] = [:]
        var maxActiveByHost: [String: Int] = [:]
        var notModified = 0
        var abortedStreams: [String: Int] = [:]
        var stopping = false
        var stopped = false
        var waiters: [Waiter] = []
        var nextWaiterID = 0

        /// Takes the waiters whose condition now holds.
        mutating func satisfiedWaiters() -> [@Sendable () -> Void] {
            var ready: [@Sendable () -> Void] = []
            var pending: [Waiter] = []
            for waiter in waiters {
                if waiter.condition(self) { ready.append(waiter.resume) } else { pending.append(waiter) }
            }
            waiters = pending
            return ready
        }

        /// Removes the waiter `id`: nil when it is gone (resumed already).
        mutating func removeWaiter(_ id: Int) -> Waiter? {
            guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return waiters.remove(at: index)
        }

        mutating func newWaiterID() -> Int {
            nextWaiterID += 1
            return nextWaiterID
        }
    }

    let state = Locked(State())
    let listener: Int32
    public let port: Int

    /// Starts listening on 127.0.0.1 (port 0 picks a free port).
    public static func start(port: Int = 0) async throws -> OriginServer {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw OriginError(message: "socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 256) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw OriginError(message: "cannot listen on 127.0.0.1:\(port): \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        return serving(fd, port: Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Starts listening on a socket already bound (a `HeldPort`'s).
    static func adopting(_ fd: Int32, port: Int) throws -> OriginServer {
        guard listen(fd, 256) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw OriginError(message: "cannot listen on 127.0.0.1:\(port): \(reason)")
        }
        return serving(fd, port: port)
    }

    private static func serving(_ fd: Int32, port: Int) -> OriginServer {
        let server = OriginServer(listener: fd, port: port)
        let thread = Thread { server.acceptLoop() }
        thread.name = "artcache.origin.accept"
        thread.start()
        return server
    }

    private init(listener: Int32, port: Int) {
        self.listener = listener
        self.port = port
    }

    deinit { stop() }

    /// Stops accepting connections (open ones finish their current response).
    public func stop() { mutate { $0.stopping = true } }

    /// Returns once the listening socket is closed.
    public func waitUntilStopped() async { await waitFor { $0.stopped } }

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public func url(_ path: String) -> String { baseURL + path }

    public func register(_ name: String, _ resource: Resource) {
        state.withLock { $0.resources[name] = resource }
    }

    /// Requests seen for a path (without query).
    public func requestCount(_ path: String) -> Int { state.withLock { $0.requests[path] ?? 0 } }
    public var totalRequests: Int { state.withLock { $0.requests.values.reduce(0, +) } }
    /// Every request's path, in the order they arrived.
    public var requestLog: [String] { state.withLock { $0.requestLog } }
    /// The request targets received, in order, as sent (query and escapes included).
    public var requestTargets: [String] { state.withLock { $0.targetLog } }
    /// How long a `/gate/` request is held at most (seconds; 30 unless set).
    public var gateLimit: TimeInterval {
        get { state.withLock { $0.gateLimit } }
        set { state.withLock { $0.gateLimit = newValue } }
    }
    /// Lets every `/gate/NAME` request, held or future, through.
    public func openGate() { mutate { $0.gateOpen = true } }
    /// Holds `/gate/NAME` requests again, from the next one.
    public func closeGate() { mutate { $0.gateOpen = false } }
    /// Returns once `count` requests have arrived.
    public func waitForRequests(_ count: Int) async { await waitFor { $0.requestLog.count >= count } }
    /// Most requests being answered at once, over all hosts / for one Host
    /// header value. A request counts from its head being read until its
    /// response starts: a client that starts its next request once it has a
    /// response is never counted twice, however late this thread runs.
    public var maxConcurrent: Int { state.withLock { $0.maxActive } }
    public func maxConcurrent(host: String) -> Int { state.withLock { $0.maxActiveByHost[host] ?? 0 } }
    /// 304 answers sent.
    public var notModifiedCount: Int { state.withLock { $0.notModified } }

    /// Returns once `path` has been requested (`count` times).
    public func waitForRequest(_ path: String) async { await waitForRequests(path, 1) }
    public func waitForRequests(_ path: String, _ count: Int) async { await waitFor { ($0.requests[path] ?? 0) >= count } }

    /// Returns once a body for `path` was cut off because the client left.
    public func waitForAbortedStream(_ path: String) async { await waitFor { ($0.abortedStreams[path] ?? 0) > 0 } }

    /// Returns once `condition` holds, or once the waiting task is cancelled
    /// (a test's time limit then ends the test instead of hanging the run).
    func waitFor(_ condition: @escaping @Sendable (State) -> Bool) async {
        let id = state.withLock { $0.newWaiterID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Task.isCancelled is read under the lock: a cancellation that
                // came before this registration is seen here, a later one
                // finds the waiter in onCancel.
                let ready = state.withLock { s -> Bool in
                    if condition(s) || Task.isCancelled { return true }
                    s.waiters.append((id, condition, { continuation.resume() }))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.removeWaiter(id) }?.resume()
        }
    }

    /// Blocks a connection's thread until `condition` holds: false when
    /// `seconds` passed first.
    func block(until condition: @escaping @Sendable (State) -> Bool, seconds: TimeInterval) -> Bool {
        let signal = DispatchSemaphore(value: 0)
        let id = state.withLock { s -> Int? in
            if condition(s) { return nil }
            let id = s.newWaiterID()
            s.waiters.append((id, condition, { signal.signal() }))
            return id
        }
        guard let id else { return true }
        if signal.wait(timeout: .now() + seconds) == .success { return true }
        // Resumed between the timeout and here: it held after all.
        return state.withLock { $0.removeWaiter(id) } == nil
    }

    func mutate(_ change: (inout State) -> Void) {
        let ready = state.withLock { s -> [@Sendable () -> Void] in
            change(&s)
            return s.satisfiedWaiters()
        }
        for resume in ready { resume() }
    }

    private func acceptLoop() {
        while !state.withLock({ $0.stopping }) {
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            let thread = Thread { [self] in
                serve(connection: client)
                close(client)
            }
            thread.name = "artcache.origin.connection"
            thread.start()
        }
        close(listener)
        mutate { $0.stopped = true }
    }
}

public struct OriginError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
