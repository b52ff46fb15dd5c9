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

extension ImagePipeline {
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
        return try await originals.run(key: flight, priority: priority) { [self] priority in
            // A download's lease is given up once its result is recorded:
            // a process waiting on it then finds the original, or the failure.
            let lease = LeaseHold()
            do {
                let outcome = try await load(url, reload: mode == .reload, behind: behind, plan: plan, staleOK: staleOK,
                                             lease: lease, priority: priority)
                await release(lease, behind: behind)
                return outcome
            } catch {
                if !Self.isHolderFailure(error) { await recordFailure(of: url, error) }
                await release(lease, behind: behind, failure: error)
                throw error
            }
        }
    }

    /// An original as a response (dimensions read from its header).
    func originalResponse(_ url: NormalizedURL, mode: FetchMode, priority: PriorityHandle) async throws -> ImageResponse {
        let outcome = try await original(url, mode: mode, behind: true, priority: priority)
        let source: ImageResponse.Source = switch outcome.source {
        case .cached: .disk
        case .revalidated: .revalidated
        case .stale: .stale
        case .downloaded, .uncacheable: .network
        case .tier2: .tier2
        }
        let (width, height) = try await dimensions(of: outcome.data, priority: priority)
        if let entry = outcome.entry { computeIntrinsicsBehind(of: entry) }
        var response = ImageResponse(data: outcome.data,
                                     contentType: outcome.entry?.contentType ?? Sniffer.sniff(outcome.data).mimeType,
                                     width: width, height: height, source: source, cacheKey: outcome.entry?.cacheKey,
                                     entry: outcome.entry, repaired: outcome.repaired, freshUntil: outcome.entry?.expiresAt)
            .with(info: outcome.entry.flatMap(ImageInfo.init(entry:)))
            .with(original: outcome.entry)
        response.notKept = outcome.notKept
        return response
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
            let hit = await dated(stored)
            // Smaller than this request needs: the larger rendition replaces it
            // (unless it fails, or the network is down; then what is stored serves).
            var undersized = false
            if let plan, !holds(hit.entry, enoughFor: plan) {
                do {
                    if let response = try await fetchRendition(plan, for: url, priority: priority) {
                        return try await keep(response, url: url, now: now, behind: behind, fetched: plan.stored)
                    }
                } catch let error as DownloadError where error.isNetworkFailure {
                    logger.debug("larger rendition not fetched, serving the stored one",
                                 metadata: ["url": "\(url)", "reason": "\(error.reason)"])
                    undersized = true
                }
            }
            var outcome = hit.entry.isFresh(at: now)
                ? FetchOutcome(source: .cached, entry: hit.entry, data: hit.data, repaired: false, downloadedBytes: 0)
                : try await answerExpired(hit, url: url, now: now, behind: behind, staleOK: staleOK, priority: priority)
            outcome.undersized = undersized
            return outcome
        }
        if !reload { try await refuseIfRemembered(url, now: now) }
        if !reload, let stored = try await fromTier2(url, behind: behind, staleOK: staleOK, now: now, priority: priority) {
            return stored
        }
        // Another process downloading it: its result, not a download of our own.
        if let stored = try await awaitLease(url, lease: lease, reload: reload) { return stored }
        if let plan, let response = try await fetchRendition(plan, for: url, priority: priority) {
            return try await keep(response, url: url, now: now, behind: behind, fetched: plan.stored)
        }
        let response = try await download(url.string, validators: nil, priority: priority)
        guard response.status != 304 else {
            throw DownloadError(.httpStatus, "\(url): 304 Not Modified for an unconditional request", status: 304)
        }
        return try await keep(response, url: url, now: now, behind: behind)
    }

    /// Sniffs a 2xx body and stores it (or only checks it, under
    /// `no-store`). Refusing a body that is not an image is the pipeline's
    /// job, before anything is stored: the store keeps what it is given.
    func keep(_ response: HTTPResponse, url: NormalizedURL, now: Date, behind: Bool,
                      fetched: CacheStore.FetchedRendition? = nil) async throws -> FetchOutcome {
        let declared = response.headers["content-type"]
        let policy = HTTPCachePolicy(headers: response.headers, now: now, heuristics: heuristics)
        // Sniffed, then hashed for the store (`sniff_hash`): the store takes the hash.
        let sniffing = ContinuousClock.now
        let checked: Sniffer.Checked
        do {
            checked = try await Self.check(response.body, declaredType: declared)
        } catch let refusal as Sniffer.Refusal {
            stages.record(.sniffHash, since: sniffing)
            // An image in a format not taken is `unsupported` (not remembered
            // as "not an image": the origin is right, this build is not).
            throw ArtCacheError(refusal.isUnsupportedImage ? .unsupported : .notAnImage, "\(url): \(refusal.message)",
                                underlying: refusal)
        }
        if policy.noStore {
            stages.record(.sniffHash, since: sniffing)
            return FetchOutcome(source: .uncacheable, entry: nil, data: response.body, repaired: checked.repaired,
                                downloadedBytes: response.body.count)
        }
        let sha256 = try await CacheStore.hash(response.body)
        stages.record(.sniffHash, since: sniffing)
        let validators = policy.validators(response.headers)
        let entry = behind
            ? try await store.putBehind(url: url.string, data: response.body, contentType: checked.sniffed.mimeType,
                                        declaredType: checked.declared, repaired: checked.repaired, validators: validators,
                                        fetched: fetched, sha256: sha256, now: now)
            : try await store.put(url: url.string, data: response.body, contentType: checked.sniffed.mimeType,
                                  declaredType: checked.declared, repaired: checked.repaired, validators: validators,
                                  fetched: fetched, sha256: sha256, now: now)
        writeToTier2Behind(url: url, data: response.body, sha256: sha256, contentType: checked.sniffed.mimeType,
                           declaredType: checked.declared, repaired: checked.repaired, validators: validators, now: now)
        return FetchOutcome(source: .downloaded, entry: entry, data: response.body, repaired: checked.repaired,
                            downloadedBytes: response.body.count)
    }

    /// ``Sniffer/check(_:declaredType:)`` off Swift's cooperative threads
    /// when it may inflate an svgz (up to 32 MiB): gzip bodies go to the
    /// blocking pool; everything else is a bounded look at the first bytes.
    static func check(_ body: Data, declaredType: String?) async throws -> Sniffer.Checked {
        let gzip = body.count >= 2 && body[body.startIndex] == 0x1F && body[body.startIndex + 1] == 0x8B
        guard gzip else { return try Sniffer.check(body, declaredType: declaredType) }
        return try await Blocking.run { try Sniffer.check(body, declaredType: declaredType) }
    }
}
