import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

/// How an original was obtained.
public enum OriginalSource: String, Sendable, Codable {
    /// Fresh in the cache: no network.
    case cached
    /// Expired, and the origin answered 304: expiry refreshed, no body.
    case revalidated
    /// Downloaded and stored.
    case downloaded
    /// Downloaded, but the origin said `no-store`: not kept.
    case uncacheable
    /// Read from the shared second tier (`[tier2]`) and stored: no origin request.
    case tier2
    /// Expired, and served as stored: within stale-while-revalidate (a
    /// revalidation runs behind), or the origin unreachable or failing
    /// (stale-if-error).
    case stale
}

/// An original, and how it was obtained.
package struct FetchOutcome: Sendable {
    package typealias Source = OriginalSource

    package let source: Source
    /// The index row (nil for `.uncacheable`).
    package let entry: CacheEntry?
    package let data: Data
    /// The declared Content-Type was wrong and was corrected.
    package let repaired: Bool
    /// Bytes transferred for this item.
    package let downloadedBytes: Int
    /// Smaller than the request needs: its provider's larger rendition could
    /// not be fetched now (a network failure), so the stored smaller one
    /// serves this answer. What is rendered from it is not stored: the next
    /// request tries the larger rendition again.
    package var undersized = false

    /// Why what is made from it is answered but not kept (nil: kept).
    var notKept: ImageResponse.NotKept? {
        undersized ? .undersized : entry == nil ? .noStore : nil
    }
}

/// Originals: one load per URL at a time (a flight, coalesced), through
/// the stored copy (its freshness is ``Freshness``'s), the second tier,
/// another process's download (a lease), a provider's rendition, then the
/// origin. Owns the load flights and the provider fallbacks.
final class Originals: PipelinePart {
    let context: PipelineContext
    let freshness: Freshness
    let tier: TierLink
    /// Loads of originals, one per key; one whose requesters all left is
    /// finished by the background scheduler (`orphaned_flight`).
    let flights: Coalescer<OriginalFlight, FetchOutcome>
    /// Profiles left out for a host after a rendition failed, until when
    /// (by "profile host"; Originals+Profiles).
    let profileFallbacks = Locked<[String: Date]>([:])

    init(context: PipelineContext, freshness: Freshness, tier: TierLink) {
        self.context = context
        self.freshness = freshness
        self.tier = tier
        flights = Coalescer(adopt: ImagePipeline.adopter(context.background))
    }

    /// Loads in flight now (tests).
    var inFlight: Int { flights.inFlight }
    /// Requesters that joined a load (tests).
    var joins: Watched<Int> { flights.joins }
}

extension Originals {
    /// The original for `url`: from the cache when fresh, revalidated when
    /// expired, downloaded otherwise (`mode` may forbid the network or the
    /// cache). Concurrent calls for one URL share one download, which runs
    /// at the highest priority of its callers. Network failures go to the
    /// persistent retry queue; an origin's final answer takes the URL out.
    /// `behind`: a download returns once checked; it is committed behind
    /// (``CacheStore/putBehind(url:data:contentType:declaredType:repaired:validators:now:)``).
    ///
    /// `pixels`: the longer side of the largest output it is fetched for;
    /// a provider profile may then fetch another rendition
    /// (ImagePipeline+Profiles), and a stored original smaller than that is
    /// replaced by the larger one.
    func original(_ url: NormalizedURL, mode: FetchMode = .normal, behind: Bool = false, pixels: Int? = nil,
                  staleOK: Bool = true, priority: PriorityHandle) async throws -> FetchOutcome {
        if mode == .cacheOnly {
            guard let hit = try await store.lookup(key: url.key, counting: false) else {
                throw ArtCacheError(.notCached, "\(url): not in the cache (cache-only request)")
            }
            return FetchOutcome(source: .cached, entry: hit.entry, data: hit.data, repaired: false, downloadedBytes: 0)
        }
        let plan = renditionPlan(url, pixels: pixels)
        let flight = OriginalFlight(key: url.key, purpose: .load(mode: mode, staleOK: staleOK, rendition: plan?.rendition.url))
        return try await flights.run(key: flight, priority: priority) { [self] priority in
            // A download's lease is given up once its result is recorded:
            // a process waiting on it then finds the original, or the failure.
            let lease = LeaseHold()
            do {
                let outcome = try await load(url, reload: mode == .reload, behind: behind, plan: plan, staleOK: staleOK,
                                             lease: lease, priority: priority)
                await release(lease, behind: behind)
                return outcome
            } catch {
                if !Self.isHolderFailure(error) { await freshness.recordFailure(of: url, error) }
                await release(lease, behind: behind, failure: error)
                throw error
            }
        }
    }

    /// Width and height from the header (no pixel decoded), read on a render
    /// thread (libvips' own) at the request's priority; 0 x 0 for bytes this
    /// renderer does not open (a format that is not enabled, a damaged
    /// header). Cancellation is not swallowed: it throws.
    func dimensions(of data: Data, priority: PriorityHandle) async throws -> (Int, Int) {
        let renderer = self.renderer
        let header: ImageHeader?
        do {
            header = try await renderer.onRenderThread(priority: priority) { try? renderer.header(of: data) }
        } catch is CancellationError {
            throw CancellationError()
        }
        guard let header else { return (0, 0) }
        let rotated = header.orientation >= 5 && header.orientation <= 8
        return rotated ? (header.height, header.width) : (header.width, header.height)
    }

    private func load(_ url: NormalizedURL, reload: Bool, behind: Bool, plan: RenditionPlan?, staleOK: Bool,
                      lease: LeaseHold, priority: PriorityHandle) async throws -> FetchOutcome {
        let now = Date()
        if !reload, let stored = try await store.lookup(key: url.key, counting: false) {
            let hit = await freshness.dated(stored)
            // Smaller than this request needs: the larger rendition replaces it
            // (unless it fails, or the network is down; then what is stored serves).
            var undersized = false
            if let plan, !holds(hit.entry, enoughFor: plan) {
                do {
                    if let response = try await fetchRendition(plan, for: url, priority: priority) {
                        return try await freshness.keep(response, url: url, now: now, behind: behind, fetched: plan.stored)
                    }
                } catch let error as DownloadError where error.isNetworkFailure {
                    logger.debug("larger rendition not fetched, serving the stored one",
                                 metadata: ["url": "\(url)", "reason": "\(error.reason)"])
                    undersized = true
                }
            }
            var outcome = hit.entry.isFresh(at: now)
                ? FetchOutcome(source: .cached, entry: hit.entry, data: hit.data, repaired: false, downloadedBytes: 0)
                : try await freshness.answerExpired(hit, url: url, now: now, behind: behind, staleOK: staleOK, priority: priority)
            outcome.undersized = undersized
            return outcome
        }
        if !reload { try await freshness.refuseIfRemembered(url, now: now) }
        if !reload, let stored = try await fromTier2(url, behind: behind, staleOK: staleOK, now: now, priority: priority) {
            return stored
        }
        // Another process downloading it: its result, not a download of our own.
        if let stored = try await awaitLease(url, lease: lease, reload: reload) { return stored }
        if let plan, let response = try await fetchRendition(plan, for: url, priority: priority) {
            return try await freshness.keep(response, url: url, now: now, behind: behind, fetched: plan.stored)
        }
        let response = try await download(url.string, validators: nil, priority: priority)
        guard response.status != 304 else {
            throw DownloadError(.httpStatus, "\(url): 304 Not Modified for an unconditional request", status: 304)
        }
        return try await freshness.keep(response, url: url, now: now, behind: behind)
    }
}
