import ArtCacheOrigin
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
@testable import ArtCacheServiceGrammar
@testable import ArtCacheStore
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

/// A loopback origin, a pipeline and the thumbnail service over it, with a
/// signer holding the service's key.
struct ServiceHarness {
    static let key = [UInt8](repeating: 0x5A, count: 32)
    let harness: LoopbackHarness
    let service: ThumbnailService
    let signer: ServiceURLSigner

    /// `live`: the service listens on 127.0.0.1 port 0 and a client leaving cancels its request.
    /// `healthMaxAge`: how old `/health`'s answer may be (zero: checked each time).
    /// `log`: where the service logs, every level (else warnings, dropped).
    init(live: Bool = false, healthMaxAge: Duration = .zero, log: LogCounter? = nil,
         _ configure: (inout Configuration) -> Void = { _ in }) async throws {
        harness = try await LoopbackHarness { configuration in
            configuration.service.keys = [Self.key]
            configuration.service.port = 0
            // A full run starts every suite at once on 2 cores: a request held
            // at an origin gate may wait far past the 30 s default before the
            // test opens it. Tests of the deadline set their own.
            configuration.service.timeout = 150
            configure(&configuration)
        }
        var logger = log?.logger ?? Logger(label: "artcache.test.service")
        if log == nil { logger.logLevel = .warning }
        service = try await ThumbnailService(pipeline: harness.pipeline, logger: logger, cancelOnDisconnect: live,
                                             healthMaxAge: healthMaxAge)
        signer = ServiceURLSigner(settings: harness.pipeline.configuration.service)
    }

    var origin: OriginServer { harness.origin }
    var pipeline: ImagePipeline { harness.pipeline }

    /// The signed path for an origin path (`/img/a.jpg`) with service options.
    func path(_ originPath: String, _ options: String = "original") throws -> String {
        signer.path(for: origin.url(originPath), options: try ThumbnailOptions(parsing: options))
    }

    func app() -> some ApplicationProtocol { buildApplication(service: service) }

    func close() async throws { try await pipeline.close() }

    /// A restart: a new pipeline and service over the same cache (this
    /// harness's closed first by the caller), its configuration changed by `configure`.
    func restarted(_ configure: (inout Configuration) -> Void = { _ in }) async throws -> (pipeline: ImagePipeline, service: ThumbnailService) {
        var configuration = pipeline.configuration
        configure(&configuration)
        var logger = Logger(label: "artcache.test.restart")
        logger.logLevel = .warning
        let pipeline = try await ImagePipeline.open(configuration: configuration, logger: logger)
        return (pipeline, try await ThumbnailService(pipeline: pipeline, logger: logger, cancelOnDisconnect: false, healthMaxAge: .zero))
    }
}

extension ServiceURLSigner {
    /// `X-ArtCache-Signature` and `X-ArtCache-Expires` of `POST
    /// /v1/manifest[?query]` with `body`, valid for `seconds`.
    func manifestHeaders(_ body: [UInt8], query: String = "", seconds: Int = 120) -> HTTPFields {
        let expires = Int(Date().timeIntervalSince1970) + seconds
        return [ThumbnailService.signatureHeader: signature(method: "POST", path: "/v1/manifest", query: query, expires: expires, body: body)!,
                ThumbnailService.expiresHeader: String(expires)]
    }

    /// ``manifestHeaders(_:query:seconds:)`` by name, for a raw client.
    func manifestHeaderLines(_ body: [UInt8], query: String = "") -> [String: String] {
        Dictionary(uniqueKeysWithValues: manifestHeaders(body, query: query).map { ($0.name.rawName, $0.value) })
    }

    /// The same as the lines of a raw request head (each ending in CRLF).
    func manifestHead(_ body: [UInt8], query: String = "") -> String {
        manifestHeaders(body, query: query).map { "\($0.name.rawName): \($0.value)\r\n" }.joined()
    }
}

extension ServiceHarness {
    /// A JPEG of `width` x `height` registered as `name`.
    func register(_ name: String, width: Int = 64, height: Int = 48, type: String = "image/jpeg") throws {
        origin.register(name, .init(body: try Fixtures.image(width: width, height: height, suffix: ".jpg"), contentType: type))
    }
}

/// A bare HTTP/1.1 client on a socket, for what URL clients hide: sending a
/// request and closing the connection before the answer.
enum RawHTTP {
    /// Connects to 127.0.0.1:`port`, sends a GET for `path`, returns the socket.
    static func send(port: Int, path: String) throws -> Int32 {
        let fd = try connectLoopback(port: port, timeout: 0)  // 0: no receive timeout, as before
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        _ = request.withCString { write(fd, $0, strlen($0)) }
        return fd
    }
}

/// GETs through URLSession (several at once, unlike the test client's one connection).
enum HTTPGet {
    struct Answer: Sendable {
        let status: Int
        let headers: [String: String]
        let body: Data
    }

    static func get(_ url: String, headers: [String: String] = [:]) async throws -> Answer {
        try await send(url, headers: headers)
    }

    /// Any method, with a body: for requests that may wait for admission in a
    /// loaded run (a client that gives up after 20 s failed CI once).
    static func send(_ url: String, method: String = "GET", headers: [String: String] = [:], body: Data? = nil) async throws -> Answer {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.httpBody = body
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.timeoutInterval = 150  // no byte for this long fails (a loaded full run is slow)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return Answer(status: http.statusCode, headers: fields, body: data)
    }
}

extension RawHTTP {
    /// Sends `requests` (paths) pipelined in one write on one connection and
    /// reads their responses in the order they come: each as its status line
    /// and lower-cased header fields (bodies read by Content-Length and
    /// dropped). Bounded: gives up after `seconds` without data.
    static func pipelined(port: Int, paths: [String], seconds: Int = 60) throws -> [(status: String, headers: [String: String])] {
        let fd = try connectLoopback(port: port, timeout: seconds)
        defer { close(fd) }
        let text = paths.map { "GET \($0) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" }.joined()
        _ = text.withCString { write(fd, $0, strlen($0)) }
        var buffer: [UInt8] = []
        var responses: [(status: String, headers: [String: String])] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while responses.count < paths.count {
            // A complete response in the buffer?
            let separator: [UInt8] = [13, 10, 13, 10]
            if let end = buffer.indices.first(where: { buffer[$0...].starts(with: separator) }) {
                let (statusLine, headers) = responseHead(buffer[..<end])
                let length = Int(headers["content-length"] ?? "0") ?? 0
                if buffer.count >= end + 4 + length {
                    responses.append((statusLine, headers))
                    buffer.removeFirst(end + 4 + length)
                    continue
                }
            }
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { throw POSIXError(.ETIMEDOUT) }
            buffer += chunk[..<count]
        }
        return responses
    }
}

/// The status line and the lower-cased headers of a response's head (the
/// bytes before its blank line).
func responseHead(_ bytes: ArraySlice<UInt8>) -> (statusLine: String, headers: [String: String]) {
    let head = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
    var headers: [String: String] = [:]
    for line in head.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return (head.first ?? "", headers)
}

/// Runs blocking test I/O (a raw socket waiting out a deadline) on a thread
/// of its own: never on Swift's cooperative pool, and never on the
/// service's `Blocking` pool, whose few threads the service under test needs
/// for its own index reads (tests holding them for seconds starved it).
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.name = "artcache.test.socket"
        thread.start()
    }
}

/// A TCP socket connected to 127.0.0.1:`port`, with a receive timeout of
/// `timeout` seconds (and the same send timeout with `sendTimeout`); closed
/// again and ECONNREFUSED when the connect fails.
func connectLoopback(port: Int, timeout seconds: Int, sendTimeout: Bool = false) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    var timeout = timeval(tv_sec: seconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    if sendTimeout { setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(fd)
        throw POSIXError(.ECONNREFUSED)
    }
    return fd
}

/// One keep-alive connection to a live test server, for the tests of what a
/// connection keeps between its requests (a request per connection is
/// ``TestClient``'s). It waits as long as the test's time limit.
struct PatientClient {
    struct Answer {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let body: ByteBuffer
    }

    /// The connection's reader and writer (one task uses them, in turn).
    private final class Exchange {
        var parts: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
        let writer: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>

        init(parts: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator,
             writer: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>) {
            self.parts = parts
            self.writer = writer
        }
    }

    private let exchange: Exchange
    private let port: Int

    static func with<Value>(port: Int, _ body: (PatientClient) async throws -> Value) async throws -> Value {
        let channel = try await TestClient.connect(port: port)
        return try await channel.executeThenClose { inbound, outbound in
            try await body(PatientClient(exchange: Exchange(parts: inbound.makeAsyncIterator(), writer: outbound), port: port))
        }
    }

    func execute(uri: String, method: HTTPRequest.Method = .get, headers: HTTPFields = [:]) async throws -> Answer {
        let head = TestClient.head(uri: uri, method: method, headers: headers, port: port, bodyLength: nil, keepAlive: true)
        try await exchange.writer.write(contentsOf: [.head(head), .end(nil)])
        let response = try await TestClient.read(&exchange.parts)
        return Answer(status: response.status, headers: response.headers, body: response.body)
    }
}
