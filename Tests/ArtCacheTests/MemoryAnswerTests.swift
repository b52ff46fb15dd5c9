@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTPTypes
import Testing

/// The one decision of what a memory hit answers
/// (``ThumbnailService/memoryAnswer(path:accept:saveData:ifNoneMatch:)``), shared by
/// the bytes handler and the router, and its one memo of answers.
@Suite("Service: what a memory hit answers", .timeLimit(.minutes(2)))
struct MemoryAnswerTests {
    static let accept = RawHitHandlerTests.accept

    /// The answer, or a failed expectation naming what came instead.
    static func hit(_ answer: ThumbnailService.MemoryAnswer, sourceLocation: SourceLocation = #_sourceLocation) -> ThumbnailService.Prepared? {
        guard case .hit(let prepared) = answer else {
            Issue.record("not a hit: \(answer)", sourceLocation: sourceLocation)
            return nil
        }
        return prepared
    }

    /// The address of a body's bytes: the same address, the same bytes in memory (not built again).
    static func address(_ body: ByteBuffer?) -> UnsafeRawPointer? {
        body?.withUnsafeReadableBytes { $0.baseAddress.map { UnsafeRawPointer($0) } }
    }

    @Test func knownAnswersForEachKindOfRequest() async throws {
        let (s, path, warm) = try await RawHitHandlerTests.warm()
        let service = s.service
        // Not a valid path: the refusal the router sends.
        let forged = "/" + String(repeating: "A", count: 43) + path.drop { $0 != "/" }.dropFirst().drop { $0 != "/" }
        guard case .refused(let refusal) = service.memoryAnswer(path: forged, accept: Self.accept, saveData: false, ifNoneMatch: nil) else {
            Issue.record("a forged signature is refused")
            return
        }
        #expect(refusal.reason == "bad_signature" && refusal.status == .forbidden)
        // Valid, not in memory: the parsed request goes on.
        let elsewhere = try s.path("/img/elsewhere.jpg", "40x40")
        guard case .miss(let parsed) = service.memoryAnswer(path: elsewhere, accept: Self.accept, saveData: false, ifNoneMatch: nil) else {
            Issue.record("not in memory is a miss")
            return
        }
        #expect(parsed.request.url.hasSuffix("/img/elsewhere.jpg") && parsed.negotiated && parsed.signed)
        #expect(service.hitRoutes.count == 1, "a miss leaves no route (the warm-up's hit left one)")

        let ok = try #require(Self.hit(service.memoryAnswer(path: path, accept: Self.accept, saveData: false, ifNoneMatch: nil)))
        #expect(ok.status == .ok && Array(buffer: ok.body ?? ByteBuffer()) == warm.body)
        #expect(ok.headers[.contentType] == warm.type && ok.headers[.vary] == "Accept, Save-Data" && ok.headers[.artcacheSource] == "memory")
        #expect(ok.headers[.contentLength] == String(warm.body.count) && ok.head != nil, "a kept answer: its head built once")
        let etag = try #require(ok.headers[.eTag])
        // If-None-Match: the ETag, weak or in a list, or `*`, is a 304 without a body or its length.
        for asked in [etag, "W/\(etag)", "\"other\", \(etag)", "*"] {
            let revalidated = try #require(Self.hit(service.memoryAnswer(path: path, accept: Self.accept, saveData: false, ifNoneMatch: asked)))
            #expect(revalidated.status == .notModified && revalidated.body == nil, "\(asked)")
            #expect(revalidated.headers[.contentLength] == nil && revalidated.headers[.eTag] == etag, "\(asked)")
            #expect(revalidated.headers[.cacheControl] == ok.headers[.cacheControl], "\(asked)")
        }
        let other = try #require(Self.hit(service.memoryAnswer(path: path, accept: Self.accept, saveData: false, ifNoneMatch: "\"other\"")))
        #expect(other.status == .ok && Self.address(other.body) == Self.address(ok.body), "the kept answer, whole")
        #expect(service.hitRoutes.count == 1, "one route for the path and Accept")
        try await s.close()
    }

    /// Whichever way a hit comes in, it gets the same answer: the
    /// router's (here a `HEAD`, and a `GET` with `Connection: close`)
    /// and the bytes handler's come from the same route.
    @Test func theRouterAndTheConnectionsBytesGiveTheSameAnswer() async throws {
        let (s, path, warm) = try await RawHitHandlerTests.warm()
        let connection = try await HitRouteTests.Connection(s)
        let raw = try #require(try await connection.get(path, accept: Self.accept))
        await connection.close()
        #expect(s.service.hitRoutes.count == 1)
        let hits = s.pipeline.memory.stats.hits
        let (head, get) = try await s.app().test(.router) { client in
            (try await client.execute(uri: path, method: .head, headers: [.accept: Self.accept]),
             try await client.execute(uri: path, method: .get, headers: [.accept: Self.accept, .connection: "close"]))
        }
        #expect(s.pipeline.memory.stats.hits == hits + 2, "both counted as memory hits")
        #expect(s.service.hitRoutes.count == 1, "by the same route")
        #expect(Array(buffer: get.body) == warm.body && raw.body == warm.body && head.body.readableBytes == 0)
        for response in [head, get] {
            #expect(response.status == .ok)
            for name in ["etag", "content-type", "content-length", "cache-control", "last-modified", "vary", "x-artcache-source"] {
                let field = try #require(HTTPField.Name(name))
                #expect(response.headers[field] == raw.headers[name], "\(name)")
            }
        }
        try await s.close()
    }

    /// A memory hit that is not final (its row still open: here the
    /// scheduler is closed, so its upgrade never runs) is looked up each
    /// time, and its route keeps its answer without a ticket: the same bytes
    /// are answered with the answer built the first time.
    @Test func aHitThatIsNotFinalIsLookedUpEachTimeAndNotBuiltAgain() async throws {
        // WebP behind only: Chrome's cold answer at 16 px is then AVIF, tried
        // again at its slower effort (by default WebP is, with AVIF behind it).
        let s = try await ServiceHarness { $0.service.webp = .behind }
        s.origin.register("flat.png", .init(body: try Fixtures.image(width: 8, height: 8, suffix: ".png"), contentType: "image/png"))
        let path = try s.path("/img/flat.png", "16x16,fit=cover")
        let choice = ServiceUpgradeTests.chromeChoice(s, 16)
        try #require(choice.better == choice.cold, "the table tries the cold format again at a slower effort")
        await s.pipeline.background.close()
        let cold = try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: [.accept: Self.accept])
        }
        #expect(cold.status == .ok && cold.headers[.artcacheSource] == "network")
        let first = try #require(Self.hit(s.service.memoryAnswer(path: path, accept: Self.accept, saveData: false, ifNoneMatch: nil)))
        let key = ThumbnailService.HitRoute.Key(path: path, accept: Self.accept, saveData: false)
        let route = try #require(s.service.hitRoutes[key])
        #expect(route.ticket == nil, "not final: no ticket")
        let hits = s.pipeline.memory.stats.hits
        let second = try #require(Self.hit(s.service.memoryAnswer(path: path, accept: Self.accept, saveData: false, ifNoneMatch: nil)))
        #expect(s.pipeline.memory.stats.hits == hits + 1, "looked up again")
        #expect(Array(buffer: second.body ?? ByteBuffer()) == Array(buffer: cold.body))
        #expect(Self.address(second.body) == Self.address(first.body), "the answer built the first time")
        #expect(second.headers == first.headers)
        try await s.close()
    }

    /// A request read whole from the bytes but not answered from memory
    /// goes on to the decoder alone: the hits behind it wait for the
    /// router's answers (in order), and once those have ended the next hit
    /// on the connection is answered from its bytes again.
    @Test func hitsBehindARequestPassedOnWaitForItThenAreAnsweredFromBytesAgain() async throws {
        let (s, path, warm) = try await RawHitHandlerTests.warm()
        let channel = try await RawHitHandlerTests.channel(s)
        let elsewhere = try s.path("/img/elsewhere.jpg", "40x40")  // valid, not in memory
        try await channel.writeInbound(ByteBuffer(string: RawHitHandlerTests.get(elsewhere) + RawHitHandlerTests.get(path)))
        #expect(try await RawHitHandlerTests.answers(channel).isEmpty, "the hit is not answered before the request ahead of it")
        #expect(try await RawHitHandlerTests.passed(channel).map(\.path) == [elsewhere, path], "both on to the router, in order")
        // The router answers the first: the second is still with it.
        try await channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .notFound, headerFields: [.contentLength: "0"])))
        try await channel.writeOutbound(HTTPResponsePart.end(nil))
        try await channel.writeInbound(ByteBuffer(string: RawHitHandlerTests.get(path)))
        #expect(try await RawHitHandlerTests.answers(channel).map(\.statusLine) == ["HTTP/1.1 404 Not Found"])
        #expect(try await RawHitHandlerTests.passed(channel).map(\.path) == [path], "behind the one still with the router")
        for _ in 0..<2 {
            try await channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok, headerFields: [.contentLength: "0"])))
            try await channel.writeOutbound(HTTPResponsePart.end(nil))
        }
        #expect(try await RawHitHandlerTests.answers(channel).count == 2)
        let hits = s.service.channelHits.load(ordering: .relaxed)
        try await channel.writeInbound(ByteBuffer(string: RawHitHandlerTests.get(path)))
        let answers = try await RawHitHandlerTests.answers(channel)
        #expect(answers.count == 1 && answers.first?.body == warm.body && answers.first?.headers["x-artcache-source"] == "memory")
        #expect(s.service.channelHits.load(ordering: .relaxed) == hits + 1, "answered from its bytes")
        #expect(try await RawHitHandlerTests.passed(channel).isEmpty)
        _ = try? await channel.finish()
        try await s.close()
    }
}
