@testable import ArtCacheCore
@testable import ArtCacheServer
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Testing

/// Memory hits answered from the connection's bytes (``RawHitHandler``),
/// in a channel pipeline of NIO's own HTTP/1 decoder and the connection's
/// guard, as the server builds it, on an embedded channel: every byte in,
/// every byte out, the clock moved by hand. What reaches the pipeline's
/// tail is what the router would get.
@Suite("Memory hits from the connection's bytes", .timeLimit(.minutes(3)))
struct RawHitHandlerTests {
    struct Answer {
        var statusLine: String
        var headers: [String: String]
        var body: [UInt8]
    }

    /// A harness with `a.jpg` at 40x40 in the memory tier as Chrome gets
    /// it (its format upgrade done), its path, and that answer.
    static func warm() async throws -> (ServiceHarness, String, (body: [UInt8], type: String)) {
        let s = try await ServiceHarness { $0.service.cacheMaxAge = 3600 }
        try s.register("a.jpg")
        let path = try s.path("/img/a.jpg", "40x40")
        let body = try await s.app().test(.router) { client in
            let cold = try await client.execute(uri: path, method: .get, headers: [.accept: accept])
            #expect(cold.status == .ok && cold.headers[.artcacheSource] == "network")
            // Its format upgrade done, the final bytes asked once more: in memory now, and they stay.
            await s.pipeline.waitForUpgrades()
            var final = try await client.execute(uri: path, method: .get, headers: [.accept: accept])
            if final.headers[.artcacheSource] != "memory" {
                final = try await client.execute(uri: path, method: .get, headers: [.accept: accept])
            }
            #expect(final.status == .ok && final.headers[.artcacheSource] == "memory")
            return (Array(buffer: final.body), final.headers[.contentType] ?? "")
        }
        return (s, path, body)
    }

    /// The server's pipeline for one connection, minus Hummingbird's router.
    /// On NIO's async testing channel: a test's awaits resume on any
    /// thread, and its event loop may be used from all of them (an
    /// `EmbeddedChannel` only from the thread that made it).
    static func channel(_ s: ServiceHarness) async throws -> NIOAsyncTestingChannel {
        let channel = NIOAsyncTestingChannel()
        let service = s.service
        try await channel.testingEventLoop.executeInContext {
            try channel.pipeline.syncOperations.addHandlers([
                ByteToMessageHandler(HTTPRequestDecoder()), HTTPResponseEncoder(), HTTP1ToHTTPServerCodec(secure: false),
                ConnectionGuard(service: service),
            ])
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return channel
    }

    /// Whether the connection's guard is reading a request (its read deadline runs).
    static func guardIsReading(_ channel: NIOAsyncTestingChannel) async throws -> Bool {
        try await channel.testingEventLoop.executeInContext {
            try channel.pipeline.syncOperations.handler(type: ConnectionGuard.self).reading
        }
    }

    /// A browser's (the thumbnail was warmed with it: the answer depends on it).
    static let accept = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"

    static func get(_ path: String, _ extra: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: \(accept)\r\n\(extra)\r\n"
    }

    /// The answers written so far, parsed by their Content-Length.
    static func answers(_ channel: NIOAsyncTestingChannel) async throws -> [Answer] {
        var bytes: [UInt8] = []
        while let buffer = try await channel.readOutbound(as: ByteBuffer.self) { bytes += Array(buffer: buffer) }
        var answers: [Answer] = []
        let separator: [UInt8] = [13, 10, 13, 10]
        while let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) {
            let (statusLine, headers) = responseHead(bytes[..<end])
            let length = Int(headers["content-length"] ?? "0") ?? 0
            #expect(bytes.count >= end + 4 + length, "a whole body")
            answers.append(Answer(statusLine: statusLine, headers: headers, body: Array(bytes[(end + 4)..<min(bytes.count, end + 4 + length)])))
            bytes.removeFirst(min(bytes.count, end + 4 + length))
        }
        #expect(bytes.isEmpty, "nothing but whole answers")
        return answers
    }

    /// The request heads that went on to the router.
    static func passed(_ channel: NIOAsyncTestingChannel) async throws -> [HTTPRequest] {
        var heads: [HTTPRequest] = []
        while let part = try await channel.readInbound(as: HTTPRequestPart.self) {
            if case .head(let head) = part { heads.append(head) }
        }
        return heads
    }

    /// The head reader's known answers: the path, what it reads, whether the
    /// path can be an image path (three slashes, no query: the memory tier
    /// is asked only then), and what it leaves to the decoder.
    @Test func theHeadReaderKnowsImagePaths() {
        func parse(_ text: String) -> RawRequestHead?? {
            RawRequestHead.parse(ByteBuffer(string: text), maxHead: RawHitHandler.maxHead)
        }
        let image = parse("GET /sig/100x100/aHR0cA HTTP/1.1\r\nAccept: image/avif\r\nIf-None-Match: \"e\"\r\n\r\n")
        #expect(image??.path == "/sig/100x100/aHR0cA" && image??.isImagePath == true)
        #expect(image??.accept == "image/avif" && image??.ifNoneMatch == "\"e\"" && image??.length == 76)
        #expect(parse("GET /sig/100x100/aHR0cA?x=1 HTTP/1.1\r\n\r\n")??.isImagePath == false)
        #expect(parse("GET /v1/info/sig/aHR0cA HTTP/1.1\r\n\r\n")??.isImagePath == false)
        #expect(parse("GET /health HTTP/1.1\r\n\r\n")??.isImagePath == false)
        let incomplete = parse("GET /sig/100x100/aHR0cA HTTP/1.1\r\nAccept: a")
        #expect(incomplete != nil && incomplete! == nil, "incomplete: wait for more")
        #expect(parse("POST /sig/100x100/aHR0cA HTTP/1.1\r\n\r\n") == nil, "the decoder's")
        #expect(parse("GET /sig/100x100/aHR0cA HTTP/1.1\r\nContent-Length: 0\r\n\r\n") == nil, "a body: the decoder's")
    }

    @Test func pipelinedHitsAndOneInPiecesAreAnsweredInOrderAsTheRouterWould() async throws {
        let (s, path, cold) = try await Self.warm()
        let body = cold.body
        let channel = try await Self.channel(s)
        let before = s.service.channelHits.load(ordering: .relaxed)
        try await channel.writeInbound(ByteBuffer(string: Self.get(path) + Self.get(path)))
        var answers = try await Self.answers(channel)
        #expect(answers.count == 2)
        // One more, a byte at a time: nothing is answered before its blank line.
        let third = Array(Self.get(path, "If-None-Match: \"nope\"\r\nConnection: keep-alive\r\n").utf8)
        for (index, byte) in third.enumerated() {
            try await channel.writeInbound(ByteBuffer(bytes: [byte]))
            if index < third.count - 1 { #expect(try await Self.answers(channel).isEmpty, "answered at byte \(index)") }
        }
        answers += try await Self.answers(channel)
        #expect(answers.count == 3)
        for answer in answers {
            #expect(answer.statusLine == "HTTP/1.1 200 OK")
            #expect(answer.body == body)
            #expect(answer.headers["x-artcache-source"] == "memory" && answer.headers["content-type"] == cold.type)
            #expect(answer.headers["content-length"] == String(body.count) && answer.headers["etag"] != nil)
            #expect(answer.headers["server"] == "artcache" && answer.headers["date"] != nil)
            #expect(answer.headers["cache-control"]?.hasPrefix("public, max-age=") == true)
        }
        #expect(try await Self.passed(channel).isEmpty, "nothing reached the router")
        #expect(s.service.channelHits.load(ordering: .relaxed) == before + 3)

        // A revalidation that matches: 304, no body.
        let etag = try #require(answers[0].headers["etag"])
        try await channel.writeInbound(ByteBuffer(string: Self.get(path, "If-None-Match: \(etag)\r\n")))
        let revalidated = try await Self.answers(channel)
        #expect(revalidated.map(\.statusLine) == ["HTTP/1.1 304 Not Modified"])
        #expect(revalidated.first?.body.isEmpty == true && revalidated.first?.headers["etag"] == etag)
        _ = try? await channel.finish()
        try await s.close()
    }

    /// Each of these goes to the decoder and the router; the hit before it
    /// was answered. Those the strict reader refuses hand the connection
    /// over for good; one it reads whole but cannot answer from memory (not
    /// in memory) goes alone, and a hit behind it is passed on too, in
    /// order, until it is answered (MemoryAnswerTests).
    /// `then`: a hit follows it (not after a request that closes the
    /// connection, which the decoder refuses to read past). `refused`: the
    /// guard answers it on its headers (a GET with a body: 413, and closes).
    static let others: [(name: String, request: @Sendable (String) -> String, then: Bool, refused: Bool)] = [
        ("HEAD", { "HEAD \($0) HTTP/1.1\r\nHost: h\r\n\r\n" }, true, false),
        ("POST", { "POST \($0) HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n" }, true, false),
        ("HTTP/1.0", { "GET \($0) HTTP/1.0\r\nHost: h\r\n\r\n" }, false, false),
        ("Connection: close", { get($0, "Connection: close\r\n") }, false, false),
        ("Connection: upgrade", { get($0, "Connection: keep-alive, Upgrade\r\n") }, true, false),
        ("Content-Length: 0", { get($0, "Content-Length: 0\r\n") }, true, false),
        ("a chunked body", { get($0, "Transfer-Encoding: chunked\r\n") + "0\r\n\r\n" }, false, true),
        ("Expect", { get($0, "Expect: 100-continue\r\n") }, true, false),
        ("two Accept headers", { get($0, "Accept: image/jpeg\r\n") }, true, false),
        ("a head over 4 KB", { get($0, "X-Big: \(String(repeating: "b", count: 5000))\r\n") }, true, false),
        ("not in memory", { _ in get("/img/elsewhere") }, true, false),
    ]

    @Test(arguments: others.indices)
    func anythingElseGoesToTheDecoderFromThatRequestOn(_ index: Int) async throws {
        let other = Self.others[index]
        let (s, path, _) = try await Self.warm()
        let channel = try await Self.channel(s)
        try await channel.writeInbound(ByteBuffer(string: Self.get(path) + other.request(path) + (other.then ? Self.get(path) : "")))
        let answers = try await Self.answers(channel)
        #expect(answers.first?.statusLine == "HTTP/1.1 200 OK" && answers.first?.headers["x-artcache-source"] == "memory")
        #expect(answers.count == (other.refused ? 2 : 1), "\(other.name): only the first answered from bytes")
        let passed = try await Self.passed(channel)
        #expect(passed.count == (other.refused ? 0 : other.then ? 2 : 1), "\(other.name): \(passed)")
        if other.then { #expect(passed.last?.path == path && passed.last?.method == .get, "\(other.name)") }
        _ = try? await channel.finish()
        try await s.close()
    }

    /// Bytes the decoder refuses are its to refuse: a folded header line
    /// after a hit is the decoder's error, the hit before it answered.
    @Test func whatTheDecoderRefusesIsItsError() async throws {
        let (s, path, _) = try await Self.warm()
        let channel = try await Self.channel(s)
        await #expect(throws: HTTPParserError.self) {  // NIO's decoder's own error
            try await channel.writeInbound(ByteBuffer(string: Self.get(path) + Self.get(path, "X-Long: a\r\n b\r\n")))
        }
        #expect(try await Self.answers(channel).count == 1)
        _ = try? await channel.finish()
        try await s.close()
    }

    /// A client that reads no answers: once the channel is not writable,
    /// the requests go on to the decoder (whose pipelining handler stops
    /// reading), none is answered from bytes.
    @Test func aConnectionNotReadingItsAnswersStepsAside() async throws {
        let (s, path, _) = try await Self.warm()
        let channel = try await Self.channel(s)
        channel.isWritable = false
        try await channel.writeInbound(ByteBuffer(string: Self.get(path) + Self.get(path)))
        #expect(try await Self.answers(channel).isEmpty)
        #expect(try await Self.passed(channel).count == 2)
        _ = try? await channel.finish()
        try await s.close()
    }

    /// The connection's guard sees hits answered from bytes: no request is
    /// being read after them (so the read deadline does not cut an idle
    /// keep-alive connection), and one is while half a head has come.
    @Test func theGuardSeesHitsAnsweredFromBytes() async throws {
        let (s, path, _) = try await Self.warm()
        let channel = try await Self.channel(s)
        try await channel.writeInbound(ByteBuffer(string: Self.get(path)))
        #expect(try await Self.answers(channel).count == 1)
        #expect(try await !Self.guardIsReading(channel), "idle after a hit")
        try await channel.writeInbound(ByteBuffer(string: Self.get(path) + String(Self.get(path).prefix(20))))
        #expect(try await Self.answers(channel).count == 1)
        #expect(try await Self.guardIsReading(channel), "half a head: its read deadline runs")
        try await channel.writeInbound(ByteBuffer(string: String(Self.get(path).dropFirst(20))))
        #expect(try await Self.answers(channel).count == 1)
        #expect(try await !Self.guardIsReading(channel))
        _ = try? await channel.finish()
        try await s.close()
    }
}
