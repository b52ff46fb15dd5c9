import ArtCacheCore
import ArtCacheFetch
import ArtCachePipeline
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension ThumbnailService {
    /// 200 with the bytes (or 304 when `If-None-Match` names them), with
    /// validators and caching headers. A placeholder answer carries the
    /// error's reason and is not cached. The `answer` stage is timed from
    /// `answering` (the image in hand) to the body written to the connection.
    func success(_ image: ImageResponse, request: Request, negotiated: Bool, signed: Bool, lifetime: AnswerLifetime,
                 answering: ContinuousClock.Instant) -> Response {
        response(build(image, ifNoneMatch: request.headers[.ifNoneMatch], negotiated: negotiated, signed: signed, lifetime: lifetime),
                 answering: answering)
    }

    /// `prepared` as the router's response, the `answer` stage timed from
    /// `answering` to the body written to the connection.
    func response(_ prepared: Prepared, answering: ContinuousClock.Instant) -> Response {
        let (buffer, metrics) = (prepared.body, self.metrics)
        // Timed before the end is sent: once a client has the whole answer, it is counted.
        let body = ResponseBody(contentLength: buffer?.readableBytes ?? 0) { writer in
            if let buffer { try await writer.write(buffer) }
            metrics.stage(.answer, since: answering)
            try await writer.finish(nil)
        }
        return Response(status: prepared.status, headers: prepared.headers, body: body)
    }

    /// A response as status, headers and body bytes: what both the router
    /// and the bytes handler in front of it (``RawHitHandler``) send.
    struct Prepared {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: ByteBuffer?
        /// The status line and headers as HTTP/1.1 sends them, `Server`
        /// included and `Date` not (it is the second's): built once for a
        /// kept memory hit (``RawHitHandler`` sends it as it is).
        var head: ByteBuffer?

        init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer?) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// ``head``: the status line, the headers (with `Server`, and a
        /// `Content-Length` where the answer has a body and did not say it),
        /// not the blank line. `Date` and the blank line follow it.
        func serializedHead() -> ByteBuffer {
            var out = ByteBuffer()
            out.reserveCapacity(384)
            out.writeString("HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n")
            for field in headers {
                out.writeString(field.name.rawName)
                out.writeStaticString(": ")
                out.writeString(field.value)
                out.writeStaticString("\r\n")
            }
            if headers[.server] == nil { out.writeStaticString("Server: artcache\r\n") }
            if headers[.contentLength] == nil, status.code != 304, status.code >= 200 {
                out.writeString("Content-Length: \(body?.readableBytes ?? 0)\r\n")
            }
            return out
        }
    }

    /// The answer to `image`, built from scratch: its headers from the
    /// pipeline's decision (`lifetime`, ``AnswerLifetime``), the same on every path.
    func build(_ image: ImageResponse, ifNoneMatch: String?, negotiated: Bool, signed: Bool,
               lifetime: AnswerLifetime) -> Prepared {
        var headers = HTTPFields()
        let etag = "\"" + (image.entry?.sha256.prefix(32).description ?? Self.digest(image.data)) + "\""
        headers[.eTag] = etag
        headers[.contentType] = image.contentType
        // Negotiated answers depend on the format the client takes and on its data-saver mode.
        if negotiated { headers[.vary] = "Accept, Save-Data" }
        headers[.artcacheSource] = image.source.rawValue
        if let still = image.still { headers[.artcacheStill] = still }
        if let error = image.error { metrics.refused(reason: error.reason) }
        switch lifetime {
        case .notKept:
            // Kept nowhere here: nor downstream, and never a 304 (no validator of it is kept).
            if let error = image.error { headers[.artcacheError] = error.reason }
            if let notKept = image.notKept { headers[.artcacheNotKept] = notKept.rawValue }
            headers[.cacheControl] = "no-store"
            headers[.contentLength] = String(image.data.count)
            return Prepared(status: .ok, headers: headers, body: ByteBuffer(bytes: image.data))
        case .final, .upgrading:
            headers[.cacheControl] = cacheControl(for: image, now: Date(), lifetime: lifetime)
            if let modified = Self.lastModified(of: image, now: Date()) { headers[.lastModified] = modified }
        }
        if let asked = ifNoneMatch, Self.matches(asked, etag: etag) {
            return Prepared(status: .notModified, headers: headers, body: nil)
        }
        headers[.contentLength] = String(image.data.count)
        return Prepared(status: .ok, headers: headers, body: ByteBuffer(bytes: image.data))
    }

    /// An image's `Last-Modified`: the origin's, when it sent one that
    /// parses and is before the time its original was stored; else the
    /// second before that stored time. The same for every answer of the same
    /// bytes (a memory hit's and the cold answer's), and never later than
    /// the answer's `Date`: an original is stored before it is answered
    /// again, and Hummingbird's `Date` (the second's, refreshed once a
    /// second) is at most a second behind. Without a stored time (an
    /// original the origin marked `no-store`), the origin's, at most the
    /// second before `now`. Nil when neither is known.
    static func lastModified(of image: ImageResponse, now: Date) -> String? {
        let origin = image.originRules?.lastModified.flatMap { HTTPDate.parse($0, now: now) }?.timeIntervalSince1970
        let seconds: Double
        if let stored = (image.originStoredAt ?? image.entry?.createdAt)?.timeIntervalSince1970 {
            let before = stored.rounded(.down) - 1
            seconds = origin.map { min($0.rounded(.down), before) } ?? before
        } else if let origin {
            seconds = min(origin.rounded(.down), now.timeIntervalSince1970.rounded(.down) - 1)
        } else {
            return nil
        }
        return HTTPDate.string(seconds)
    }

    /// An image's `Cache-Control`, honest about its original's freshness:
    /// `max-age` is what is left of it (0 for a stale answer), capped by
    /// `[service] cache_max_age`; the stale-while-revalidate window the cache
    /// itself applies is passed on; `must-revalidate` and `immutable` only
    /// when the origin said so. Signed or not, the same: a signature names
    /// the request, not the bytes (avatars change behind one URL).
    ///
    /// `lifetime` ``AnswerLifetime/upgrading``: a cold answer that a better
    /// format will replace gets at most ``upgradingMaxAge`` (browsers and
    /// front caches come back for the better bytes); the final answer gets
    /// the normal lifetime.
    func cacheControl(for image: ImageResponse, now: Date, lifetime: AnswerLifetime = .final) -> String {
        let cap = maxAgeCap(lifetime)
        let left = image.source == .stale ? 0 : image.freshUntil.map { max(0, $0.timeIntervalSince(now)) } ?? cap
        var value = "public, max-age=\(Int(min(left, cap)))"
        let rules = image.originRules ?? HTTPValidators()
        if rules.mustRevalidate {
            value += ", must-revalidate"
        } else {
            let window = rules.staleWhileRevalidate ?? pipeline.configuration.cache.staleWhileRevalidate
            if window > 0 { value += ", stale-while-revalidate=\(Int(min(window, cap)))" }
        }
        if rules.immutable, image.source != .stale { value += ", immutable" }
        return value
    }

    /// The longest `max-age` of an answer a format upgrade will replace.
    static let upgradingMaxAge: TimeInterval = 60

    /// The longest `max-age` of an answer of `lifetime`.
    func maxAgeCap(_ lifetime: AnswerLifetime) -> TimeInterval {
        lifetime == .upgrading ? min(settings.cacheMaxAge, Self.upgradingMaxAge) : settings.cacheMaxAge
    }

    /// The error status with a one-line body naming the reason.
    /// `closing`: the answer says `Connection: close` and the connection is
    /// closed once it is sent (``ConnectionGuard``) — for refusals sent
    /// before the request's body was read, which is then never drained.
    func failure(_ failure: ServiceFailure, closing: Bool = false) -> Response {
        let prepared = refusal(failure, closing: closing)
        return Response(status: prepared.status, headers: prepared.headers, body: ResponseBody(byteBuffer: prepared.body ?? ByteBuffer()))
    }

    /// ``failure(_:closing:)`` as status, headers and body (counted in /metrics).
    func refusal(_ failure: ServiceFailure, closing: Bool = false) -> Prepared {
        metrics.refused(reason: failure.reason)
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.artcacheError] = failure.reason
        headers[.cacheControl] = "no-store"
        if let retryAfter = failure.retryAfter { headers[.retryAfter] = String(retryAfter) }
        if closing { headers[.connection] = "close" }
        let body = "\(failure.status.code) \(failure.reason)" + (failure.detail.map { ": " + Self.oneLine($0) } ?? "") + "\n"
        headers[.contentLength] = String(body.utf8.count)
        return Prepared(status: failure.status, headers: headers, body: ByteBuffer(string: body))
    }

    /// `text` as one line of at most 300 characters (no control bytes): a
    /// refusal's detail quotes what the client sent.
    static func oneLine(_ text: String) -> String {
        let visible = String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
        return visible.count > 300 ? String(visible.prefix(300)) + "…" : visible
    }

    /// The configured fallback image, naming the error it stands in for.
    func fallbackResponse(_ data: Data, contentType: String, reason: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.artcacheError] = reason
        headers[.cacheControl] = "no-store"
        headers[.contentLength] = String(data.count)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// `If-None-Match`: `*` or a list naming `etag` (weak comparison).
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }

    static func digest(_ data: Data) -> String {
        SHA256.hash(data: data).prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}
