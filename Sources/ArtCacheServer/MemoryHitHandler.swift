import ArtCache
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Answers memory hits of image paths in the connection's channel pipeline,
/// in front of Hummingbird's router: no hop into Swift concurrency and back,
/// no request context, no response writer. Whatever it does not answer (not
/// a `GET` of an image path, not a valid signed path, not fresh in the memory
/// tier, `Connection: close`, or a request behind one still being answered)
/// goes on to the router unchanged.
///
/// The hit is the router's own answer (``ThumbnailService/memoryHit(path:accept:ifNoneMatch:started:)``:
/// same headers, ETag and `304 Not Modified`, metrics and access log), plus
/// `Date` and `Server` as Hummingbird adds them. Freshness is the memory
/// tier's: an entry carries its original's expiry and is not served past it.
///
/// Pipelined requests keep their order: a request is answered here only
/// when no earlier request of the connection is still with the router.
final class MemoryHitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let service: ThumbnailService
    /// Requests passed on to the router whose response has not ended yet.
    private var withRouter = 0
    /// The rest of a request answered here (its body, its end) is dropped.
    private var dropping = false

    init(service: ThumbnailService) {
        self.service = service
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch part {
        case .head(let request):
            if withRouter == 0, let prepared = hit(request) {
                let answering = ContinuousClock.now
                dropping = true
                context.write(wrapOutboundOut(.head(HTTPResponse(status: prepared.status, headerFields: prepared.headers))),
                              promise: nil)
                if let body = prepared.body { context.write(wrapOutboundOut(.body(body)), promise: nil) }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                service.metrics.stage(.answer, since: answering)
                return
            }
            dropping = false
            withRouter += 1
            context.fireChannelRead(data)
        case .body, .end:
            if dropping {
                if case .end = part { dropping = false }
                return
            }
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { withRouter = max(0, withRouter - 1) }
        context.write(data, promise: promise)
    }

    private func hit(_ request: HTTPRequest) -> ThumbnailService.Prepared? {
        guard request.method == .get, let path = request.path, Self.isImagePath(path),
              !(request.headerFields[.connection].map(Self.saysClose) ?? false) else { return nil }
        let started = ContinuousClock.now
        guard var prepared = service.memoryHit(path: path, accept: request.headerFields[.accept],
                                               ifNoneMatch: request.headerFields[.ifNoneMatch], started: started) else { return nil }
        prepared.headers[.date] = ThumbnailService.dateHeader.text()
        prepared.headers[.server] = "artcache"
        return prepared
    }

    /// Three slashes and no query: `/{signature}/{options}/{source}`. A loop
    /// over the bytes (`String.contains` of a string goes through Foundation's
    /// NSString search on Linux: 3% of a hit in a profile).
    static func isImagePath(_ path: String) -> Bool {
        var slashes = 0
        for byte in path.utf8 {
            if byte == UInt8(ascii: "?") { return false }
            if byte == UInt8(ascii: "/") { slashes += 1 }
        }
        return slashes == 3
    }

    /// `Connection: close` (any case, possibly among other tokens).
    static func saysClose(_ value: String) -> Bool {
        value.split(separator: ",").contains { token in
            token.utf8.count >= 5 && token.trimmingCharacters(in: .whitespaces).lowercased() == "close"
        }
    }
}
