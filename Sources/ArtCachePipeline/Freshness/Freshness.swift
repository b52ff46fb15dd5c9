import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

/// Freshness apart from eviction (issue 22): what an expired original may
/// still be served for, and the revalidations that bring it back.
///
/// | past expiry by | answer |
/// |---|---|
/// | less than stale-while-revalidate | the stored bytes now (`stale`), one revalidation behind at low priority |
/// | more | the origin is asked first: 304 keeps the bytes and every variant, 200 replaces them |
/// | origin unreachable (network, `host_offline`) | the stored bytes, without limit |
/// | origin answers 5xx, less than stale-if-error | the stored bytes |
/// | 5xx past stale-if-error | the typed error |
///
/// The origin's `must-revalidate` / `proxy-revalidate` / `no-cache` forbid
/// every stale answer for that entry; its `stale-while-revalidate=` and
/// `stale-if-error=` replace `[cache]`'s defaults.
struct StaleRules: Sendable, Equatable {
    /// Seconds past expiry an entry is answered at once while revalidated behind.
    var whileRevalidate: TimeInterval
    /// Seconds past expiry an entry is served when the origin answers 5xx.
    var ifError: TimeInterval
    /// Served while the origin cannot be reached.
    var offline: Bool

    init(entry: CacheEntry, settings: CacheSettings) {
        if entry.mustRevalidate {
            (whileRevalidate, ifError, offline) = (0, 0, false)
        } else {
            whileRevalidate = entry.staleWhileRevalidate ?? settings.staleWhileRevalidate
            ifError = entry.staleIfError ?? settings.staleIfError
            offline = true
        }
    }
}

/// Why a stale entry was answered (`/metrics`: `artcache_stale_answers_total{cause}`).
package enum StaleCause: String, Sendable, CaseIterable {
    /// Within stale-while-revalidate: a revalidation runs behind.
    case whileRevalidate = "while_revalidate"
    /// The origin answered 5xx, within stale-if-error.
    case originError = "origin_error"
    /// The origin could not be reached (network failure, host offline).
    case offline
}

/// Revalidations and stale answers since the pipeline opened.
package struct FreshnessCounters: Sendable, Equatable {
    /// Revalidations by outcome: `304`, `200` (new bytes or the same), `error`.
    package var revalidated304 = 0
    package var revalidated200 = 0
    package var revalidationErrors = 0
    package var stale: [StaleCause: Int] = [:]
    /// Requests failed at once by a remembered failure (negative_ttl).
    package var negativeHits = 0

    package init() {}
}

/// Freshness by RFC 9111: what a response is kept with (``keep(_:url:now:behind:fetched:)``),
/// when a stored original is answered stale or revalidated (one
/// revalidation flight per URL), and the failures remembered
/// (`negative_ttl`) and queued for retry. Owns the revalidation flights and
/// the counters of revalidations and stale answers.
final class Freshness: PipelinePart {
    let context: PipelineContext
    let tier: TierLink
    /// Revalidations behind stale answers, one per key.
    let revalidations: Coalescer<OriginalFlight, FetchOutcome>
    let counters = Locked(FreshnessCounters())

    init(context: PipelineContext, tier: TierLink) {
        self.context = context
        self.tier = tier
        revalidations = Coalescer(adopt: ImagePipeline.adopter(context.background))
    }
}

extension Freshness {
    /// The counters of revalidations and stale answers (for `/metrics`).
    var snapshot: FreshnessCounters { counters.withLock { $0 } }

    func staleRules(for entry: CacheEntry) -> StaleRules {
        StaleRules(entry: entry, settings: configuration.cache)
    }

    /// `[cache] heuristic_max` and `default_ttl`: the freshness of responses
    /// that give none.
    var heuristics: HTTPCachePolicy.Heuristics {
        HTTPCachePolicy.Heuristics(max: configuration.cache.heuristicMax, defaultTTL: configuration.cache.defaultTTL)
    }

    /// An original stored before heuristic freshness, without an expiry
    /// (it was fresh for ever), gets one by the same rule as a new response:
    /// from its stored Last-Modified and its store time. Written when read,
    /// once per row (no bulk rewrite); a failed write only means the next
    /// read computes it again.
    func dated(_ entry: CacheEntry) async -> CacheEntry {
        guard entry.kind == .original, entry.expiresAt == nil else { return entry }
        var entry = entry
        let lifetime = entry.freshFor
            ?? heuristics.lifetime(lastModified: entry.lastModified.flatMap(HTTPDate.parse), date: entry.createdAt)
        entry.freshFor = lifetime
        entry.expiresAt = entry.createdAt.addingTimeInterval(lifetime)
        do {
            try await store.adoptExpiry(key: entry.cacheKey, expiresAt: entry.createdAt.addingTimeInterval(lifetime),
                                        freshFor: lifetime)
        } catch {
            logger.debug("cannot store the heuristic expiry", metadata: ["key": "\(entry.key)", "error": "\(error)"])
        }
        return entry
    }

    /// ``dated(_:)`` for a stored image.
    func dated(_ hit: CachedImage) async -> CachedImage {
        hit.entry.expiresAt == nil ? CachedImage(entry: await dated(hit.entry), data: hit.data) : hit
    }

    /// An expired stored original: answered stale at once within its
    /// stale-while-revalidate window (when `staleOK`), else revalidated now.
    /// A failure the origin gave lately (negative_ttl) fails it at once.
    func answerExpired(_ hit: CachedImage, url: NormalizedURL, now: Date, behind: Bool, staleOK: Bool,
                       priority: PriorityHandle) async throws -> FetchOutcome {
        try await refuseIfRemembered(url, now: now)
        let rules = staleRules(for: hit.entry)
        if staleOK, now.timeIntervalSince(hit.entry.expiresAt ?? now) < rules.whileRevalidate {
            revalidateBehind(url)
            return stale(hit, cause: .whileRevalidate)
        }
        return try await revalidate(url, hit: hit, now: now, behind: behind, priority: priority, rules: rules)
    }

    /// Asks the origin whether `hit` still holds (conditional GET of the
    /// URL it was fetched from): 304 refreshes its freshness and keeps every
    /// variant; 200 replaces it (its variants go with the old bytes, in the
    /// index and in this process's memory tier). When the origin cannot be
    /// reached, or answers 5xx within stale-if-error, the stored bytes are
    /// the answer (unless the origin forbade stale answers).
    ///
    /// `rules`: the entry's stale rules when the caller has them already.
    func revalidate(_ url: NormalizedURL, hit: CachedImage, now: Date, behind: Bool,
                    priority: PriorityHandle, rules known: StaleRules? = nil) async throws -> FetchOutcome {
        let rules = known ?? staleRules(for: hit.entry)
        let pastExpiry = now.timeIntervalSince(hit.entry.expiresAt ?? now)
        let response: HTTPResponse
        do {
            response = try await download(hit.entry.fetchedURL ?? url.string, validators: hit.entry.validators,
                                          priority: priority)
        } catch {
            if error.code != .cancelled { counters.withLock { $0.revalidationErrors += 1 } }
            if rules.offline, error.isNetworkFailure {
                // Stale beats nothing while the origin cannot be reached.
                logger.debug("revalidation failed, serving stale", metadata: ["url": "\(url)", "reason": "\(error.reason)"])
                return stale(hit, cause: .offline)
            }
            if error.code == .httpStatus, let status = error.status, status >= 500, pastExpiry < rules.ifError {
                logger.debug("origin error, serving stale", metadata: ["url": "\(url)", "reason": "\(error.reason)"])
                return stale(hit, cause: .originError)
            }
            if error.code == .httpStatus, error.status == 404 || error.status == 410 {
                // Gone at the origin: the stored bytes and their variants go
                // too (else they are served stale again); the caller
                // remembers the answer (negative_ttl).
                await forget(url)
            }
            throw error  // recorded by the caller (original(), or the revalidation behind)
        }
        if response.status == 304 {
            let validators = HTTPCachePolicy.afterNotModified(response.headers, stored: hit.entry.validators, now: now,
                                                              heuristics: heuristics)
            try await store.refresh(key: url.key, validators: validators, now: now)
            counters.withLock { $0.revalidated304 += 1 }
            let entry = try await store.entry(forKey: url.key) ?? hit.entry
            return FetchOutcome(source: .revalidated, entry: entry, data: hit.data, repaired: false, downloadedBytes: 0)
        }
        let fetched = hit.entry.fetchedURL.map {
            CacheStore.FetchedRendition(url: $0, rendition: hit.entry.rendition ?? CacheEntry.originalRendition)
        }
        let outcome = try await keep(response, url: url, now: now, behind: behind, fetched: fetched)
        counters.withLock { $0.revalidated200 += 1 }
        if outcome.source == .uncacheable {
            // The origin no longer lets the image be stored (`no-store`,
            // `private`): the copy kept from before goes, or it would be
            // served stale again in place of what the origin now answers.
            await forget(url)
        } else if response.body != hit.data {
            memory.removeFamily(of: url.key.hex)
        }
        return outcome
    }

    /// Removes `url`'s original and its variants, from the index and from
    /// this process's memory tier. A failure is logged: the error the
    /// origin gave is the answer either way.
    private func forget(_ url: NormalizedURL) async {
        memory.removeFamily(of: url.key.hex)
        do {
            _ = try await store.purge(PurgeRequest(url: url.string))
        } catch {
            logger.error("cannot remove an original its origin says is gone", metadata: ["url": "\(url)", "error": "\(error)"])
        }
        memory.removeFamily(of: url.key.hex)
    }

    private func stale(_ hit: CachedImage, cause: StaleCause) -> FetchOutcome {
        counters.withLock { $0.stale[cause, default: 0] += 1 }
        return FetchOutcome(source: .stale, entry: hit.entry, data: hit.data, repaired: false, downloadedBytes: 0)
    }

    /// Queues one `revalidation` job for `url` behind the answer, at low
    /// priority, unless one waits or runs already (or the pipeline is
    /// closing). Past `[background] max_queued` the oldest waiting
    /// revalidation is dropped: its entry is answered stale again, and
    /// revalidated by a later request.
    func revalidateBehind(_ url: NormalizedURL) {
        background.submit(BackgroundJobKey(.revalidation, key: url.key.hex), priority: .low, bytes: url.string.utf8.count) {
            [self] in await revalidateStored(url)
        }
    }

    /// The revalidation behind a stale answer: one flight per key, at low
    /// priority; nothing to do when the entry is fresh again or gone.
    private func revalidateStored(_ url: NormalizedURL) async {
        do {
            let handle = PriorityHandle(.low, background: true)
            _ = try await revalidations.run(key: OriginalFlight(key: url.key, purpose: .revalidation), priority: handle) { [self] priority in
                guard let stored = try await store.lookup(key: url.key, counting: false) else {
                    throw ArtCacheError(.notCached, "\(url): evicted before its revalidation")
                }
                let hit = await dated(stored)
                let now = Date()
                if hit.entry.isFresh(at: now) {
                    return FetchOutcome(source: .cached, entry: hit.entry, data: hit.data, repaired: false, downloadedBytes: 0)
                }
                return try await revalidate(url, hit: hit, now: now, behind: false, priority: priority)
            }
        } catch {
            await recordFailure(of: url, error)
            logger.debug("background revalidation failed", metadata: ["url": "\(url)", "error": "\(error)"])
        }
    }

    /// Waits until no revalidation behind an answer waits or runs: a
    /// one-shot command (`get`, `thumb`) calls it before ``close()`` (which
    /// cancels them), so a stale answer it gave still refreshes the cache
    /// for the next (each is bounded by `[download] timeout`).
    package func waitForRevalidations() async {
        await background.waitUntilIdle(.revalidation)
    }

    // MARK: Negative caching

    /// Fails at once when the origin's final failure for `url` is
    /// remembered (`[download] negative_ttl`), with that failure's reason.
    func refuseIfRemembered(_ url: NormalizedURL, now: Date) async throws {
        guard configuration.download.negativeTTL > 0,
              let answer = try await store.negatives.answer(forKey: url.key, now: now) else { return }
        counters.withLock { $0.negativeHits += 1 }
        let until = ISO8601DateFormatter().string(from: answer.until)
        let message = "\(answer.message) (remembered until \(until); `artcache purge --failures` forgets it)"
        let code: ArtCacheError.Code = answer.status.map { .httpStatus($0) }
            ?? ArtCacheError.NetworkReason(rawValue: answer.reason).map { .network($0) } ?? .notAnImage
        throw ArtCacheError(code, message, underlying: RememberedFailure(answer: answer))
    }

    /// The underlying error of a failure answered from memory: not recorded again.
    struct RememberedFailure: Error, Sendable {
        let answer: NegativeAnswer
    }

    /// Keeps the retry queue and the negative answers in step with a failed
    /// fetch: a network failure waits in the queue; 404, 410, "not an
    /// image" and a blocked address are remembered for negative_ttl; any other answer of the
    /// origin takes the URL out of the queue. A write that fails is logged
    /// (the fetch's error is what the caller gets).
    func recordFailure(of url: NormalizedURL, _ error: any Error) async {
        do {
            if let error = error as? DownloadError {
                if error.isNetworkFailure {
                    try await store.retries.add(url: url.string, reason: error.reason, message: error.message,
                                                 limit: configuration.download.retryQueueMax)
                } else if error.code == .httpStatus, let status = error.status, status == 404 || status == 410 {
                    try await remember(url, reason: error.reason, message: error.message, status: status, freshFor: error.freshFor)
                } else if error.code == .tooLarge {
                    // The origin's bytes are over `max_body_size`: they will
                    // be again, within negative_ttl.
                    try await remember(url, reason: error.reason, message: error.message, status: nil)
                } else if error.code == .httpStatus, let status = error.status, (500...599).contains(status) {
                    // 5xx after the retries: remembered a short while (at
                    // most a minute), so a manifest says `failed` and a
                    // burst of requests does not hammer a failing origin.
                    try await remember(url, reason: error.reason, message: error.message, status: status,
                                       freshFor: Self.serverErrorMemory)
                } else if error.code == .blockedAddress {
                    // Decided by policy on the address its host resolved to:
                    // permanent while remembered (a manifest says `failed`
                    // and queues it no more; `purge --failures` forgets it).
                    try await remember(url, reason: error.reason, message: error.message, status: nil)
                } else if error.code != .cancelled {
                    try await store.retries.remove(url: url.string)
                }
            } else if let error = error as? ArtCacheError, error.code == .notAnImage, !(error.underlying is RememberedFailure) {
                try await remember(url, reason: error.reason, message: error.message, status: nil)
            }
        } catch {
            logger.error("cannot record a failed fetch", metadata: ["url": "\(url)", "error": "\(error)"])
        }
    }

    /// How long an origin's 5xx (after the retries) is remembered, at most.
    static let serverErrorMemory: TimeInterval = 60

    /// `freshFor`: what the failed response's own Cache-Control / Expires
    /// allow; it shortens negative_ttl, never lengthens it.
    private func remember(_ url: NormalizedURL, reason: String, message: String, status: Int?,
                          freshFor: TimeInterval? = nil) async throws {
        let ttl = min(configuration.download.negativeTTL, freshFor ?? .infinity)
        guard ttl > 0 else { return try await store.retries.remove(url: url.string) }
        try await store.negatives.record(url: url.string, reason: reason, message: message, status: status, ttl: ttl)
        scheduleNegativeCleanup()
    }

    /// Past their time and over `negative_max`, remembered failures are
    /// dropped behind the answers (one job at a time).
    func scheduleNegativeCleanup() {
        let max = configuration.download.negativeMax
        background.submit(BackgroundJobKey(.negativeCleanup, key: "negative"), priority: .low, again: true) { [self] in
            do {
                _ = try await store.negatives.clean(max: max)
            } catch {
                logger.debug("negative cleanup failed; the next recorded failure retries", metadata: ["error": "\(error)"])
            }
        }
    }
}

extension Freshness {
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
        tier.writeToTier2Behind(url: url, data: response.body, sha256: sha256, contentType: checked.sniffed.mimeType,
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
