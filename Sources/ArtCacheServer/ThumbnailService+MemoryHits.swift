import ArtCachePipeline
import Foundation
import HTTPTypes

extension ThumbnailService {
    /// A memory hit for an image path, answered without leaving the caller's
    /// thread (``MemoryHitHandler`` and ``RawHitHandler`` call it on the
    /// connection's event loop): nil when the path is not a valid image path
    /// (the router answers it, with its typed refusal) or the memory tier has
    /// no fresh image for it. Counted and logged as the router's answers are.
    ///
    /// A request seen before whose hit was final (``HitRoute``) costs one
    /// lookup by path and `Accept` and a check of its memory node; any other
    /// is parsed, negotiated and looked up, and its route kept when it can be.
    func memoryHit(path: String, accept: String?, ifNoneMatch: String?, started: ContinuousClock.Instant) -> Prepared? {
        let now = Date()
        let key = HitRoute.Key(path: path, accept: accept)
        let prepared: Prepared
        let route = hitRoutes[key]
        if let route, now < route.exactUntil, pipeline.rehit(route.ticket, now: now) {
            prepared = Self.answer(route.prepared, ifNoneMatch: ifNoneMatch)
        } else {
            guard let parsed = try? parse(path: path, accept: accept),
                  let hit = pipeline.cachedNegotiatedImage(parsed.request, better: parsed.better) else {
                if route != nil { hitRoutes.remove(key) }  // its image left the tier: let it go now
                return nil
            }
            if let ticket = hit.ticket,
               let kept = kept(hit.response, negotiated: parsed.negotiated, signed: parsed.signed, upgrading: hit.upgrading, now: now) {
                hitRoutes.store(HitRoute(ticket: ticket, prepared: kept.prepared, exactUntil: kept.exactUntil), for: key)
                prepared = Self.answer(kept.prepared, ifNoneMatch: ifNoneMatch)
            } else {
                prepared = success(hit.response, ifNoneMatch: ifNoneMatch, negotiated: parsed.negotiated, signed: parsed.signed,
                                   upgrading: hit.upgrading)
            }
        }
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

    /// A request (path and `Accept`) whose memory hit was final, and its
    /// kept answer: asked again, it is answered with the same bytes and
    /// headers for as long as the memory tier still holds that image fresh,
    /// nothing better for it was kept since (``ImagePipeline/rehit(_:now:)``),
    /// and its headers are still the ones to send (``exactUntil``: an answer
    /// whose `max-age` counts down is this second's). The path's
    /// signature, options and negotiation are the same for the same bytes
    /// of path and `Accept`: only the memory tier changes, and it is asked.
    final class HitRoute: Sendable {
        struct Key: Hashable, Sendable {
            var path: String
            var accept: String?
        }

        let ticket: ImagePipeline.MemoryTicket
        let prepared: Prepared
        /// From then on the answer's `Cache-Control` is another one.
        let exactUntil: Date

        init(ticket: ImagePipeline.MemoryTicket, prepared: Prepared, exactUntil: Date) {
            self.ticket = ticket
            self.prepared = prepared
            self.exactUntil = exactUntil
        }
    }
}
