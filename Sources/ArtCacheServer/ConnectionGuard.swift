import ArtCacheCore
import ArtCacheFetch
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Deadlines and limits of one client connection, in its channel pipeline
/// (it sees every request and answer, memory hits answered from the
/// connection's bytes included (``RawHitHandler``, which it puts in front
/// of the HTTP/1 decoder), which Hummingbird's own idle handler never sees):
///
/// - **idle**: a connection with no request open for `[service]
///   idle_timeout` is closed (keep-alive clients and clients that connect
///   and send nothing);
/// - **read deadline**: a request must arrive whole — headers and body —
///   within `[service] request_read_timeout` of its first byte (a byte
///   watcher at the pipeline's head, ``ByteWatch``, sees that byte before
///   the HTTP decoder): slow headers or a trickled body are cut. (Hummingbird's
///   idle timer restarts on every body part, so it cannot cut a trickle.)
/// - **declared bodies over the route's limit** (`Content-Length` over
///   `manifest_max_body` for `POST /v1/manifest`; any body elsewhere:
///   every other route is a `GET`) are refused on the headers, 413, and
///   so are manifests without `X-ArtCache-Signature` (401): the connection
///   is closed, their body never passed on nor drained;
/// - an answer that says `Connection: close` (a refusal sent before the
///   request's body was read) closes the connection once it is sent;
/// - the connection's ``ConnectionWatch``: requests register what to cancel
///   when the client leaves, and remove it when they end.
///
/// One timer per connection, re-armed lazily: events only move timestamps
/// (a memory hit schedules nothing); the timer, when it fires, closes the
/// connection if its deadline has passed, else re-arms itself at most
/// `min(idle_timeout, request_read_timeout)` ahead, so it is never later
/// than any deadline an event could set meanwhile.
///
/// Closing after an answer shuts the output down first (the client reads the
/// answer, then end of file) and drops what the client still sends, for at
/// most ``lingerMax``, then closes: closing a socket with unread input sends
/// a reset that could destroy the answer before the client read it.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// How long a closing connection drops input before it is closed anyway.
    static let lingerMax = TimeAmount.seconds(2)

    private let service: ThumbnailService
    private let idleTimeout: TimeAmount
    private let readTimeout: TimeAmount
    /// The timer's longest step (see the type's comment).
    private let step: TimeAmount
    private let watch = ConnectionWatch()
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    /// A request is being read: its first byte came, its end has not.
    private(set) var reading = false
    private var readStarted = NIODeadline.now()
    /// Requests read (head passed on) whose answer has not ended.
    private var open = 0
    /// Since when the connection has had no request open (idle).
    private var idleSince = NIODeadline.now()
    /// The connection is closing: input is dropped until this deadline.
    private var closingBy: NIODeadline?
    /// The answer being written says `Connection: close`.
    private var closeAfterAnswer = false
    /// A refusal waiting for earlier (pipelined) answers to end.
    private var pendingRefusal: ThumbnailService.Prepared?
    /// Requests the bytes handler (``RawHitHandler``) passed on to the
    /// decoder whose answers have not ended: counted when passed on, not
    /// when their head reaches this guard (the HTTP pipelining handler in
    /// between may hold it), so a hit read after them is never answered
    /// from bytes before them.
    private(set) var passedOn = 0

    init(service: ThumbnailService) {
        self.service = service
        idleTimeout = .nanoseconds(Int64(service.settings.idleTimeout * 1e9))
        readTimeout = .nanoseconds(Int64(service.settings.requestReadTimeout * 1e9))
        step = min(idleTimeout, readTimeout)
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        service.connections.withLock { $0[ObjectIdentifier(context.channel)] = watch }
        // Sees the request's first byte, before the HTTP decoder.
        try? context.pipeline.syncOperations.addHandler(RawHitHandler(service: service, owner: self), position: .first)
        try? context.pipeline.syncOperations.addHandler(ByteWatch(owner: self), position: .first)
        idleSince = .now()
        arm()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        ended(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        ended(context)
        context.fireChannelInactive()
    }

    /// The client closed its side (Hummingbird allows half-closed
    /// connections, so this is all a client's `close()` shows until the
    /// server closes too): it is gone, and what it asked for is cancelled,
    /// as nginx treats it. A closing connection closes now.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            watch.close()
            if closingBy != nil {
                context.close(promise: nil)
                return
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// The connection is gone: no timer left, requests still running cancelled.
    private func ended(_ context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        _ = service.connections.withLock { $0.removeValue(forKey: ObjectIdentifier(context.channel)) }
        watch.close()
        self.context = nil
    }

    // MARK: Requests

    /// Bytes arrived (``ByteWatch``): false when they are to be dropped.
    fileprivate func bytesArrived() -> Bool {
        guard closingBy == nil else { return false }
        if !reading {
            reading = true
            readStarted = .now()
            arm()
        }
        return true
    }

    /// A request goes on to the decoder whole (``passedOn``).
    func passingOn() { passedOn += 1 }

    /// Requests were answered from their bytes, or passed on whole
    /// (``RawHitHandler``): none is being read unless part of the next one
    /// has come (`partLeft`: its read deadline starts now).
    func answeredInPlace(partLeft: Bool) {
        if partLeft {
            reading = true
            readStarted = .now()
            arm()
        } else {
            reading = false
            if open == 0 { idleSince = .now() }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard closingBy == nil, pendingRefusal == nil else { return }
        let part = unwrapInboundIn(data)
        switch part {
        case .head(let head):
            if !reading {
                reading = true
                readStarted = .now()
            }
            if let refusal = refusalOnHeaders(head) {
                refuse(context, service.refusal(refusal, closing: true))
                return
            }
            open += 1
        case .body:
            break
        case .end:
            reading = false
            if open == 0 { idleSince = .now() }
        }
        context.fireChannelRead(data)
        arm()
    }

    /// What a request is refused on its headers, before any of its body
    /// is passed on (so none is ever buffered): a declared body larger than
    /// the route takes (413: `Content-Length` over `manifest_max_body` for
    /// the manifest route, any body elsewhere, chunked too; a chunked
    /// manifest is counted while it streams, by the route), or a manifest
    /// without its signature header (401, unless `allow_unsigned`).
    private func refusalOnHeaders(_ head: HTTPRequest) -> ServiceFailure? {
        let path = head.path ?? ""
        let manifest = head.method == .post && (path == "/v1/manifest" || path.hasPrefix("/v1/manifest?"))
        let limit = manifest ? service.settings.manifestMaxBody : 0
        if let declared = head.headerFields[.contentLength] {
            guard let length = Int64(declared), length <= limit else { return .bodyTooLarge }
        } else if !manifest, head.headerFields[.transferEncoding] != nil {
            return .bodyTooLarge
        }
        if manifest, head.headerFields[ThumbnailService.signatureHeader] == nil, !service.settings.allowUnsigned {
            return .missingSignature
        }
        return nil
    }

    /// Answers `refusal` (after the answers of earlier requests, when
    /// pipelined) and closes the connection; the request goes no further.
    private func refuse(_ context: ChannelHandlerContext, _ refusal: ThumbnailService.Prepared) {
        reading = false
        guard open == 0 else {
            pendingRefusal = refusal
            return
        }
        send(context, refusal)
    }

    private func send(_ context: ChannelHandlerContext, _ refusal: ThumbnailService.Prepared) {
        var headers = refusal.headers
        headers[.date] = ThumbnailService.dateHeader.text()
        headers[.server] = "artcache"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: refusal.status, headerFields: headers))), promise: nil)
        if let body = refusal.body { context.write(wrapOutboundOut(.body(body)), promise: nil) }
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        closeAfterSending(context)
    }

    // MARK: Answers

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response):
            if let value = response.headerFields[.connection], Self.saysClose(value) { closeAfterAnswer = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            open = max(0, open - 1)
            passedOn = max(0, passedOn - 1)
            context.write(data, promise: promise)
            if closeAfterAnswer {
                closeAfterSending(context)
                return
            }
            if open == 0 {
                if let refusal = pendingRefusal {
                    pendingRefusal = nil
                    send(context, refusal)
                    return
                }
                if !reading { idleSince = .now() }
            }
            arm()
        }
    }

    /// `Connection: close` (any case, possibly among other tokens).
    static func saysClose(_ value: String) -> Bool {
        value.split(separator: ",").contains { token in
            token.utf8.count >= 5 && token.trimmingCharacters(in: .whitespaces).lowercased() == "close"
        }
    }

    /// Flushes what was written, shuts the output down (the client reads
    /// the answer, then end of file), drops input, and closes the channel
    /// when the client closes or after ``lingerMax`` at most.
    private func closeAfterSending(_ context: ChannelHandlerContext) {
        guard closingBy == nil else { return }
        closingBy = .now() + min(Self.lingerMax, readTimeout)
        reading = false
        context.flush()
        let channel = context.channel
        context.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
        timer?.cancel()
        timer = nil
        arm()
    }

    // MARK: Timer

    /// The deadline the connection is held to now (nil: none, an answer is being worked on).
    private func currentDeadline() -> NIODeadline? {
        if let closingBy { return closingBy }
        if reading { return readStarted + readTimeout }
        if open == 0 { return idleSince + idleTimeout }
        return nil
    }

    /// Schedules the timer if none is pending and a deadline applies.
    private func arm() {
        guard timer == nil, let context, let deadline = currentDeadline() else { return }
        schedule(context, at: min(deadline, .now() + step))
    }

    private func schedule(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in fired() }
    }

    private func fired() {
        timer = nil
        guard let context, let deadline = currentDeadline() else { return }
        let now = NIODeadline.now()
        guard now < deadline else {
            let why = closingBy != nil ? "closing" : reading ? "request_read_timeout" : "idle_timeout"
            service.logger.debug("closing a connection", metadata: ["reason": .string(why)])
            context.close(promise: nil)
            return
        }
        schedule(context, at: min(deadline, now + step))
    }
}

/// Tells its ``ConnectionGuard`` when bytes arrive, before the HTTP decoder
/// (the first byte of a request starts its read deadline), and drops them
/// once the connection is closing.
private final class ByteWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Strong: the guard holds no reference back; the pipeline owns both.
    private let owner: ConnectionGuard

    init(owner: ConnectionGuard) {
        self.owner = owner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if owner.bytesArrived() { context.fireChannelRead(data) }
    }
}

/// The client's connection as its requests see it: what to cancel when it
/// closes. A request registers a handler while it runs and removes it when
/// it ends, so a long keep-alive connection keeps nothing of its finished
/// requests (a close-future callback per request would stay until the
/// connection closes).
final class ConnectionWatch: Sendable {
    private struct State {
        var closed = false
        var next = 0
        var handlers: [Int: @Sendable () -> Void] = [:]
    }

    private let state = Locked(State())

    /// A watch of a connection already gone.
    static var closed: ConnectionWatch {
        let watch = ConnectionWatch()
        watch.close()
        return watch
    }

    /// Registers `handler` for the connection's close; nil when it has
    /// already closed (the caller acts at once).
    func register(_ handler: @escaping @Sendable () -> Void) -> Int? {
        state.withLock { state in
            guard !state.closed else { return nil }
            state.next += 1
            state.handlers[state.next] = handler
            return state.next
        }
    }

    func remove(_ id: Int) {
        _ = state.withLock { $0.handlers.removeValue(forKey: id) }
    }

    /// Handlers still registered (tests).
    var registered: Int { state.withLock { $0.handlers.count } }

    /// The connection closed: runs every registered handler, once.
    func close() {
        let handlers: [@Sendable () -> Void] = state.withLock { state in
            state.closed = true
            defer { state.handlers.removeAll() }
            return Array(state.handlers.values)
        }
        for handler in handlers { handler() }
    }
}
