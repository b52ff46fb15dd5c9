import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// The tests' way to run a Hummingbird application and ask it over HTTP:
/// `app.test(.live) { client in try await client.execute(uri:method:) { response in … } }`.
///
/// In place of the `HummingbirdTesting` product, whose package target links
/// AsyncHTTPClient and with it NIOSSL (a second BoringSSL: 407 C files),
/// NIOHTTP2 and NIOTransportServices into the debug and the TSan builds of
/// the suite (issue 38: CI time). Every application runs for real on
/// 127.0.0.1 at a port of its own (port 0), also for `.router`, which
/// HummingbirdTesting answered without a socket: a request here always
/// crosses the server's HTTP/1.1 channel, as a client's does.
struct TestingSetup: Sendable {
    /// Kept for the tests that do not need a socket (they get one anyway).
    static var router: TestingSetup { TestingSetup() }
    static var live: TestingSetup { TestingSetup() }
}

/// An answer as a test reads it.
struct TestResponse: Sendable {
    let head: HTTPResponse
    let body: ByteBuffer
    var status: HTTPResponse.Status { head.status }
    var headers: HTTPFields { head.headerFields }
}

/// Requests to the application under test: one connection per request
/// (`Connection: close`), a deadline per request (`timeout`).
struct TestClient: Sendable {
    let port: Int?
    /// What a loaded full run on 2 cores may take (the service's own
    /// timeout in the tests is 150 s).
    var timeout: TimeAmount = .seconds(150)

    func execute(uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:],
                 body: ByteBuffer? = nil) async throws -> TestResponse {
        guard let port else { throw TestClientError.notStarted }
        let head = Self.head(uri: uri, method: method, headers: headers, port: port, bodyLength: body?.readableBytes, keepAlive: false)
        let channel = try await Self.connect(port: port)
        // The deadline is the connection's: past it the event loop closes
        // it, which ends the exchange's wait for bytes.
        let expired = NIOLockedValueBox(false)
        let deadline = channel.channel.eventLoop.scheduleTask(in: timeout) {
            expired.withLockedValue { $0 = true }
            channel.channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        do {
            return try await channel.executeThenClose { inbound, outbound in
                // The whole request in one write: the server may answer (and
                // close, as asked) once it has the head; a second write after
                // its answer would be I/O on a closed channel, not a failure.
                var request: [HTTPClientRequestPart] = [.head(head)]
                if let body { request.append(.body(.byteBuffer(body))) }
                request.append(.end(nil))
                try await outbound.write(contentsOf: request)
                var parts = inbound.makeAsyncIterator()
                return try await Self.read(&parts)
            }
        } catch where expired.withLockedValue({ $0 }) {
            throw TestClientError.timeout
        }
    }

    /// `execute`, then `testCallback` on the answer.
    @discardableResult
    func execute<Return>(uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil,
                         testCallback: (TestResponse) throws -> Return) async throws -> Return {
        try testCallback(try await execute(uri: uri, method: method, headers: headers, body: body))
    }

    /// An HTTP/1.1 connection to 127.0.0.1:`port`.
    static func connect(port: Int) async throws -> NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart> {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
    }

    /// One answer's parts, head to end.
    static func read(_ parts: inout NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator) async throws -> TestResponse {
        var answer: HTTPResponseHead?
        var collected = ByteBuffer()
        while let part = try await parts.next() {
            switch part {
            case .head(let head): answer = head
            case .body(var bytes): collected.writeBuffer(&bytes)
            case .end:
                guard let answer else { throw TestClientError.noHead }
                return TestResponse(head: try response(answer), body: collected)
            }
        }
        throw TestClientError.noEnd
    }

    /// The request head: `Host`, the fields asked for, `Connection`, the body's length.
    static func head(uri: String, method: HTTPRequest.Method, headers: HTTPFields, port: Int, bodyLength: Int?,
                     keepAlive: Bool) -> HTTPRequestHead {
        var fields = HTTPHeaders()
        fields.add(name: "Host", value: "127.0.0.1:\(port)")
        for field in headers { fields.add(name: field.name.rawName, value: field.value) }
        fields.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        if let bodyLength { fields.replaceOrAdd(name: "Content-Length", value: "\(bodyLength)") }
        return HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method.rawValue), uri: uri, headers: fields)
    }

    private static func response(_ head: HTTPResponseHead) throws -> HTTPResponse {
        var fields = HTTPFields()
        for (name, value) in head.headers {
            guard let field = HTTPField.Name(name) else { throw TestClientError.badHeader(name) }
            fields.append(HTTPField(name: field, value: value))
        }
        return HTTPResponse(status: .init(code: Int(head.status.code), reasonPhrase: head.status.reasonPhrase),
                            headerFields: fields)
    }
}

enum TestClientError: Error {
    case notStarted, noHead, noEnd, timeout
    case badHeader(String)
}

extension ApplicationProtocol {
    /// Runs the application on 127.0.0.1 (port 0: its own), calls `test`
    /// with a client of it, then shuts it down gracefully, whatever `test` did.
    func test<Value: Sendable>(_ setup: TestingSetup, _ test: @Sendable (TestClient) async throws -> Value) async throws -> Value {
        let (ports, port) = AsyncStream.makeStream(of: Int.self)
        let app = LiveApplication(base: self, port: port)
        let services = ServiceGroup(configuration: .init(services: [app], logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // A server that does not start ends the wait for its port too.
                defer { port.finish() }
                try await services.run()
            }
            var bound: Int?
            for await value in ports {
                bound = value
                break
            }
            do {
                let value = try await test(TestClient(port: bound))
                await services.triggerGracefulShutdown()
                return value
            } catch {
                await services.triggerGracefulShutdown()
                throw error
            }
        }
    }
}

/// `base` listening on 127.0.0.1 port 0, telling `port` where it listens.
private struct LiveApplication<Base: ApplicationProtocol>: ApplicationProtocol, Service {
    typealias Responder = Base.Responder
    let base: Base
    let port: AsyncStream<Int>.Continuation

    var responder: Responder { get async throws { try await base.responder } }
    var server: HTTPServerBuilder { base.server }
    var eventLoopGroup: any EventLoopGroup { base.eventLoopGroup }
    var configuration: ApplicationConfiguration { base.configuration.with(address: .hostname("127.0.0.1", port: 0)) }
    var logger: Logger { base.logger }
    var services: [any Service] { base.services }
    var processesRunBeforeServerStart: [@Sendable () async throws -> Void] { base.processesRunBeforeServerStart }

    @Sendable func onServerRunning(_ channel: any Channel) async {
        await base.onServerRunning(channel)
        if let bound = channel.localAddress?.port { port.yield(bound) }
        port.finish()
    }
}
