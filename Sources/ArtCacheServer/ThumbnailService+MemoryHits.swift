import ArtCachePipeline
import Foundation
import HTTPTypes

/// Memory hits: the one decision of what the memory tier answers to a
/// request for an image path (``memoryAnswer(path:accept:saveData:ifNoneMatch:)``),
/// made the same way by both places a hit is answered — the connection's
/// bytes (``RawHitHandler``, in front of the HTTP/1 decoder, for keep-alive
/// `GET`s) and the router's image route (every other request: `HEAD`,
/// `Connection: close`, HTTP/1.0, and every request of a connection the
/// bytes handler stepped aside from) — and its one memo of answers
/// (``hitRoutes``).
extension ThumbnailService {
    /// What the memory tier answers to a request for an image path.
    enum MemoryAnswer {
        /// A memory hit: the answer to send (its `200`, or `304 Not
        /// Modified` when `If-None-Match` names its ETag).
        case hit(Prepared)
        /// A valid path not answered from memory: the request as parsed and
        /// negotiated, for the disk and the network.
        case miss(Negotiated)
        /// Not a valid image path: the refusal (signature, options, source).
        case refused(ServiceFailure)
    }

    /// The memory tier's answer to `path` with `accept`, `saveData` (`Save-Data: on`) and `ifNoneMatch`,
    /// without leaving the caller's thread (the bytes handler calls it on
    /// the connection's event loop).
    ///
    /// A request answered from memory before (same path, `Accept` and `Save-Data`: the
    /// same signature, options and negotiation) whose route is final
    /// (``HitRoute``) costs one memo lookup and a check of its memory node;
    /// any other is parsed, negotiated and looked up, and its answer kept
    /// in its route when it can be (built once: the next hit of the same
    /// bytes costs no headers, dates or body copy).
    func memoryAnswer(path: String, accept: String?, saveData: Bool, ifNoneMatch: String?) -> MemoryAnswer {
        let now = Date()
        let key = HitRoute.Key(path: path, accept: accept, saveData: saveData)
        let route = hitRoutes[key]
        if let route, let ticket = route.ticket, now < route.exactUntil, pipeline.rehit(ticket, now: now) {
            return .hit(Self.answer(route.prepared, ifNoneMatch: ifNoneMatch))
        }
        let parsed: Negotiated
        do {
            parsed = try parse(path: path, accept: accept, saveData: saveData)
        } catch {
            return .refused(error)
        }
        guard let hit = pipeline.cachedNegotiatedImage(parsed.request, better: parsed.better) else {
            if route != nil { hitRoutes.remove(key) }  // its image left the tier: let it go now
            return .miss(parsed)
        }
        let image = hit.response
        let lifetime = hit.lifetime
        guard let kept = kept(image, negotiated: parsed.negotiated, signed: parsed.signed, lifetime: lifetime, now: now) else {
            return .hit(build(image, ifNoneMatch: ifNoneMatch, negotiated: parsed.negotiated, signed: parsed.signed,
                              lifetime: lifetime))
        }
        let prepared: Prepared
        if let route, route.answer == kept.answer {
            prepared = route.prepared  // the same bytes and headers: not built again
        } else {
            var built = build(image, ifNoneMatch: nil, negotiated: parsed.negotiated, signed: parsed.signed, lifetime: lifetime)
            built.head = built.serializedHead()
            prepared = built
        }
        hitRoutes.store(HitRoute(ticket: hit.ticket, answer: kept.answer, prepared: prepared, exactUntil: kept.exactUntil), for: key)
        return .hit(Self.answer(prepared, ifNoneMatch: ifNoneMatch))
    }

    /// ``memoryAnswer(path:accept:saveData:ifNoneMatch:)`` for the bytes handler
    /// (``RawHitHandler``): the hit's answer, counted and logged as the
    /// router's answers are; nil when it is no memory hit (the router
    /// answers it, with its typed refusal for an invalid path).
    func memoryHit(path: String, accept: String?, saveData: String?, ifNoneMatch: String?,
                   started: ContinuousClock.Instant) -> Prepared? {
        guard case .hit(let prepared) = memoryAnswer(path: path, accept: accept, saveData: Negotiation.savesData(saveData),
                                                     ifNoneMatch: ifNoneMatch) else { return nil }
        channelHits.add(1, ordering: .relaxed)
        let elapsed = (ContinuousClock.now - started).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        let bytes = prepared.body?.readableBytes ?? 0
        metrics.memoryHit(status: prepared.status.code, seconds: seconds, bytes: bytes)
        if settings.accessLog {
            logger.access(AccessLine(method: "GET", path: path, status: prepared.status.code, tier: "memory", bytes: bytes,
                                     seconds: seconds, error: prepared.headers[.artcacheError]),
                          source: Self.logSource)
        }
        return prepared
    }

    /// The memory hit a request (path and `Accept`) was answered with, and
    /// its answer built once.
    ///
    /// A final hit's route (one with a ``ticket``) answers the same request
    /// again with the same bytes and headers for as long as the memory tier
    /// still holds that image fresh, nothing better for it was kept since
    /// (``ImagePipeline/rehit(_:now:)``), and its headers are still the
    /// ones to send (``exactUntil``: an answer whose `max-age` counts down
    /// is this second's). The path's signature, options and negotiation are
    /// the same for the same bytes of path and `Accept`: only the memory
    /// tier changes, and it is asked. A hit that is not final (its format
    /// upgrade is still to come) is looked up each time; its answer is
    /// built again only when what it is made of changed (``answer``).
    final class HitRoute: Sendable {
        struct Key: Hashable, Sendable {
            var path: String
            var accept: String?
            /// `Save-Data: on` (another quality, another answer).
            var saveData: Bool
        }

        /// The memory node of a final hit; nil: look it up each time.
        let ticket: ImagePipeline.MemoryTicket?
        /// What ``prepared`` is made of.
        let answer: PreparedKey
        let prepared: Prepared
        /// From then on the answer's `Cache-Control` is another one.
        let exactUntil: Date

        init(ticket: ImagePipeline.MemoryTicket?, answer: PreparedKey, prepared: Prepared, exactUntil: Date) {
            self.ticket = ticket
            self.answer = answer
            self.prepared = prepared
            self.exactUntil = exactUntil
        }
    }

    /// What a stored image's answer depends on besides its bytes (named by
    /// their SHA-256): the same key, the same answer.
    struct PreparedKey: Hashable, Sendable {
        var sha256: String
        var contentType: String
        var negotiated: Bool
        var signed: Bool
        var lifetime: AnswerLifetime
        var created: Date
        /// What `Last-Modified` is made of (``lastModified(of:now:)``).
        var originModified: String?
        var originStored: Date?
        /// The second the answer was built in, for an image whose `max-age`
        /// counts down (less than `cache_max_age` left): its answer is
        /// rebuilt each second. 0 while the cap is what it says.
        var second: Int
    }

    /// Whether a memory hit's `200` is kept built (in its ``HitRoute``):
    /// what it is made of, and until when it stays exact — the end of this
    /// second once its `max-age` counts down (it is built again each second
    /// then). Nil for an answer not kept: not from memory, not kept anywhere
    /// (``AnswerLifetime/notKept``), a body over ``preparedBodyMax``.
    func kept(_ image: ImageResponse, negotiated: Bool, signed: Bool, lifetime: AnswerLifetime,
              now: Date) -> (answer: PreparedKey, exactUntil: Date)? {
        guard image.source == .memory, lifetime != .notKept, image.data.count <= Self.preparedBodyMax,
              let entry = image.entry, !entry.sha256.isEmpty else { return nil }
        let cap = maxAgeCap(lifetime)
        let countsDown = image.freshUntil.map { $0.timeIntervalSince(now) < cap } ?? false
        let answer = PreparedKey(sha256: entry.sha256, contentType: image.contentType, negotiated: negotiated, signed: signed,
                                 lifetime: lifetime, created: entry.createdAt, originModified: image.originRules?.lastModified,
                                 originStored: image.originStoredAt, second: countsDown ? Int(now.timeIntervalSince1970) : 0)
        // Counting down, it is the answer of this second only.
        let exactUntil = countsDown ? Date(timeIntervalSince1970: Double(answer.second + 1))
            : image.freshUntil.map { $0.addingTimeInterval(-cap) } ?? .distantFuture
        return (answer, exactUntil)
    }

    /// A kept `200`, or its `304` when `If-None-Match` names its ETag.
    static func answer(_ prepared: Prepared, ifNoneMatch: String?) -> Prepared {
        if let asked = ifNoneMatch, let etag = prepared.headers[.eTag], matches(asked, etag: etag) {
            var headers = prepared.headers
            headers[.contentLength] = nil
            return Prepared(status: .notModified, headers: headers, body: nil)
        }
        return prepared
    }

    /// Memory hits whose answers are kept built (``hitRoutes``): at most
    /// this many, of bodies up to ``preparedBodyMax`` (thumbnails; 16 MiB
    /// at most in all).
    static let preparedCountMax = 512
    static let preparedBodyMax = 32 << 10
}
