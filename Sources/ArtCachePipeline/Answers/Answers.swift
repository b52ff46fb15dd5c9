import ArtCacheCore
import ArtCacheRender
import ArtCacheStore
import Foundation

/// Format upgrades (issue 35, docs/formats.md): a thumbnail
/// answered cold (a cheap format, or the fastest effort of its format) is
/// encoded again behind the answer — a `format_upgrade` job of the
/// background scheduler — in the better format at the `.behind` effort of
/// the calibrated table, and the better bytes are kept only when they save
/// ``upgradeGain`` of the cold ones; otherwise the cold variant's row
/// remembers "no gain" (`upgrade`, schema v11) and it is never encoded
/// again. The better format may be the cold one at a slower effort: the
/// better bytes then replace the cold ones under the same variant key.
/// Negotiated answers and the format upgrades behind them: which stored
/// variant answers a negotiated request (animated, an upgrade kept, else
/// the cold one) and whether an upgrade is queued behind it
/// (``AnswerLifetime``). Owns the upgrades' counters.
final class Answers: PipelinePart {
    let context: PipelineContext
    let requests: Requests
    let facts: SourceFacts
    /// Format upgrades ended, by outcome (``upgradeCounts``).
    let upgrades = Locked(UpgradeCounts())

    init(context: PipelineContext, requests: Requests, facts: SourceFacts) {
        self.context = context
        self.requests = requests
        self.facts = facts
    }

    /// The answer to `request` through the tiers (memory, disk, network).
    func image(_ request: ImageRequest) async throws(ArtCacheError) -> ImageResponse {
        try await requests.image(request)
    }

    func cachedImage(for request: ImageRequest) -> ImageResponse? { requests.cachedImage(for: request) }

    func resolve(_ request: ImageRequest) throws(ArtCacheError) -> Requests.Resolved { try requests.resolve(request) }

    typealias NegotiatedImage = ImagePipeline.NegotiatedImage
    typealias MemoryTicket = ImagePipeline.MemoryTicket
}

extension ImagePipeline {
    /// Kept when the better bytes are at most this fraction of the cold ones.
    package static let upgradeGain = 0.85

    /// What a negotiated request was answered with.
    package struct NegotiatedImage: Sendable {
        package var response: ImageResponse
        /// The answer is the cold format and a better one is (or will be)
        /// tried behind it: clients should come back soon.
        package var upgrading: Bool
        /// A memory hit that is final (nothing is queued or will be queued
        /// behind it): the same request is answered with the same bytes
        /// while ``ImagePipeline/rehit(_:now:)`` says so, without resolving it again.
        package var ticket: MemoryTicket?

        init(response: ImageResponse, upgrading: Bool, ticket: MemoryTicket? = nil) {
            self.response = response
            self.upgrading = upgrading
            self.ticket = ticket
        }
    }

    /// A final memory hit, held: its node in the memory tier, and the key
    /// of a better answer that would be given before it if it appeared.
    package struct MemoryTicket: @unchecked Sendable {
        // @unchecked: `MemoryCache.Node` is mutable, but its fields are
        // `fileprivate` to MemoryCache.swift and only read or written there
        // under the tier's lock (``MemoryCache/touch(_:unless:freshAt:)``);
        // the ticket only carries the reference.
        fileprivate let node: MemoryCache.Node
        fileprivate let shadowing: String?
    }
}

extension Answers {
    /// Whether `ticket`'s image is still the memory tier's answer to the
    /// request it was given for (still kept, fresh at `now`, nothing better
    /// kept before it): then it is marked used and counted as a hit, as
    /// ``cachedNegotiatedImage(_:better:)`` would have.
    package func rehit(_ ticket: MemoryTicket, now: Date) -> Bool {
        memory.touch(ticket.node, unless: ticket.shadowing, freshAt: now)
    }

    /// ``cachedImage(for:)`` with the tier's node of the image.
    private func cachedHeld(for request: ImageRequest, now: Date) -> (image: ImageResponse, node: MemoryCache.Node)? {
        guard !request.options.contains(.reloadIgnoringCache), let resolved = try? resolve(request),
              let hit = memory.held(forKey: resolved.memoryKey, freshAt: now) else { return nil }
        return (hit.image.with(source: .memory), hit.node)
    }

    /// `request` (its format: the cold one) unless `better` is another
    /// format whose variant is stored already, then that one. A cold answer
    /// whose row is still open queues its upgrade. An animated source
    /// (`request.animatedFormat`) is answered in its animated format, with
    /// nothing behind it (ImagePipeline+Animation).
    package func negotiatedImage(_ request: ImageRequest, better: VariantSpec.Format?) async throws(ArtCacheError) -> NegotiatedImage {
        // Known animated here (the memo): its animated variant. Otherwise the
        // variant path asks the index when it finds a stored variant, and a
        // render reads the original's bytes (Variants.variant).
        if let moved = knownAnimatedRequest(request) {
            return NegotiatedImage(response: try await image(moved), upgrading: false)
        }
        guard let better, request.size != nil else {
            return NegotiatedImage(response: try await image(request), upgrading: false)
        }
        if better != request.format {
            var upgraded = request
            upgraded.format = better
            // Only an upgrade's bytes are better: a variant of that format
            // stored at its cold effort (an explicit `f=avif`) is not.
            if let hit = cachedImage(for: upgraded), Self.isUpgrade(hit.entry) {
                return NegotiatedImage(response: hit, upgrading: false)
            }
            if try await isUpgradeStored(upgraded) {
                // (An upgrade's still of an animated source, kept by an older
                // artcache, is not its answer: the index says animated.)
                if let moved = await animatedRequest(of: request) {
                    return NegotiatedImage(response: try await image(moved), upgrading: false)
                }
                return NegotiatedImage(response: try await image(upgraded), upgrading: false)
            }
        }
        let cold = try await image(request)
        // Animated (learnt from its bytes just now): answered as it is, nothing behind it.
        if await animatedRequest(of: request) != nil { return NegotiatedImage(response: cold, upgrading: false) }
        return NegotiatedImage(response: cold, upgrading: upgrade(cold, of: request, to: better))
    }

    /// A memory hit for a negotiated request: the better variant, else the
    /// cold one (whose upgrade is queued again if it was dropped meanwhile).
    /// A hit is given a ``MemoryTicket`` when it is final: the better
    /// variant, a request with nothing better, or a cold variant whose row
    /// is closed (no gain, or upgraded already) with no upgrade queued.
    package func cachedNegotiatedImage(_ request: ImageRequest, better: VariantSpec.Format?) -> NegotiatedImage? {
        let now = Date()
        var animated = memoizedAnimation(request)
        if animated == nil, request.animatedFormat != nil, request.size != nil {
            // Not in the memo: the held answer's original row says it (its
            // frames, read with the row), else the async path asks the index once.
            guard let frames = cachedHeld(for: request, now: now)?.image.info?.frames,
                  let resolved = try? requests.resolve(request) else { return nil }
            facts.animatedSources.store(frames > 1, for: resolved.url.key.hex)
            animated = frames > 1
        }
        if animated == true, let moved = Self.animatedRequest(request) {
            return cachedHeld(for: moved, now: now).map {
                NegotiatedImage(response: $0.image, upgrading: false, ticket: MemoryTicket(node: $0.node, shadowing: nil))
            }
        }
        guard let better, request.size != nil else {
            return cachedHeld(for: request, now: now).map {
                NegotiatedImage(response: $0.image, upgrading: false, ticket: MemoryTicket(node: $0.node, shadowing: nil))
            }
        }
        var shadowing: String?
        if better != request.format {
            var upgraded = request
            upgraded.format = better
            if let hit = cachedHeld(for: upgraded, now: now), Self.isUpgrade(hit.image.entry) {
                return NegotiatedImage(response: hit.image, upgrading: false, ticket: MemoryTicket(node: hit.node, shadowing: nil))
            }
            shadowing = try? resolve(upgraded).memoryKey
        }
        guard let cold = cachedHeld(for: request, now: now) else { return nil }
        // The better format kept on disk but not in memory (after a restart,
        // or evicted from memory while a client of the cold format kept the
        // cold bytes there): only the index knows. An open cold row of
        // another format is never answered from memory to a client that
        // accepts the better one: the request goes the async way
        // (``negotiatedImage(_:better:)``), which finds the kept variant.
        if better != request.format, let entry = cold.image.entry, Self.leavesUpgrade(entry, to: better) { return nil }
        let upgrading = upgrade(cold.image, of: request, to: better)
        // Open (its upgrade not run yet, or dropped and queued again on a
        // later hit): every hit asks again. Another format's better bytes,
        // if they are kept later, are answered first (`shadowing`).
        let final = !upgrading && !(cold.image.entry.map { Self.leavesUpgrade($0, to: better) } ?? false)
        let ticket = final && (better == request.format || shadowing != nil)
            ? MemoryTicket(node: cold.node, shadowing: shadowing) : nil
        return NegotiatedImage(response: cold.image, upgrading: upgrading, ticket: ticket)
    }

    /// Whether the variant `request` names has a live row that an upgrade
    /// wrote (no bytes read).
    private func isUpgradeStored(_ request: ImageRequest) async throws(ArtCacheError) -> Bool {
        let resolved = try resolve(request)
        do {
            return Self.isUpgrade(try await store.entry(forKey: resolved.cacheKey))
        } catch {
            throw ArtCacheError(any: error, context: request.url)
        }
    }

    /// Queues the upgrade of `cold` (the answer to `request`) to `better`
    /// unless its row is no longer open (no gain, or already the better
    /// bytes) or it has no row (not stored). True when an upgrade is queued
    /// or running for it.
    private func upgrade(_ cold: ImageResponse, of request: ImageRequest, to better: VariantSpec.Format) -> Bool {
        guard cold.error == nil, let entry = cold.entry, entry.kind == .variant, Self.leavesUpgrade(entry, to: better),
              let resolved = try? resolve(request), let spec = resolved.spec else { return false }
        let target = VariantSpec(width: spec.width, height: spec.height, fit: spec.fit, format: better,
                                 quality: spec.quality, background: spec.background)
        let key = BackgroundJobKey(.formatUpgrade, key: entry.key, spec: better.rawValue)
        let memoryKey = resolved.memoryKey
        let outcome = background.submit(key, priority: .veryLow) { [self] in
            await runUpgrade(url: resolved.url, cold: entry, memoryKey: memoryKey, to: target)
        }
        return outcome == .queued || outcome == .duplicate
    }

    /// The job: renders `target` from the stored original, keeps it when it
    /// saves enough, else marks the cold variant "no gain". Either way the
    /// cold answer leaves the memory tier, so the next request sees the outcome.
    private func runUpgrade(url: NormalizedURL, cold: CacheEntry, memoryKey: String, to target: VariantSpec) async {
        do {
            try Task.checkCancellation()
            guard let original = try await store.lookup(key: url.key, counting: false),
                  cold.sourceSHA256 == nil || cold.sourceSHA256 == original.entry.sha256 else { return }
            let rendered = try await timed(.render) {
                // The lowest priority without the background share: answers
                // render first; an upgrade uses the time they leave.
                try await renderer.render(original.data, spec: target, priority: PriorityHandle(.veryLow), tier: .behind)
            }
            try Task.checkCancellation()
            if Double(rendered.data.count) <= Double(cold.size) * ImagePipeline.upgradeGain {
                // The same format: these bytes replace the cold ones under its key.
                let stored = try await store.putVariant(parent: original.entry.cacheKey, spec: target.canonical, data: rendered.data,
                                                        contentType: rendered.contentType, width: rendered.width,
                                                        height: rendered.height, sourceSHA256: original.entry.sha256,
                                                        intrinsics: nil)
                try await store.setUpgrade(key: stored.key, sha256: stored.sha256, .upgraded)
                upgrades.withLock { $0.kept += 1 }
                logger.debug("format upgrade kept", metadata: ["url": "\(url)", "spec": "\(target.canonical)",
                                                               "bytes": "\(rendered.data.count)", "cold_bytes": "\(cold.size)"])
            } else {
                if Self.format(of: cold) == target.format {
                    try await store.setUpgrade(key: cold.key, sha256: cold.sha256, .noGain)
                } else {
                    try await store.setNoGain(key: cold.key, sha256: cold.sha256, format: Self.noGainBit(target.format))
                }
                upgrades.withLock { $0.noGain += 1 }
                logger.debug("format upgrade: no gain", metadata: ["url": "\(url)", "spec": "\(target.canonical)",
                                                                   "bytes": "\(rendered.data.count)", "cold_bytes": "\(cold.size)"])
            }
            memory.remove(forKey: memoryKey)
            // A cold variant of the better format kept in memory (an explicit `f=`) is replaced too.
            memory.remove(forKey: CacheKey(parent: url.key, spec: target.canonical).hex)
        } catch is CancellationError {
            return
        } catch {
            upgrades.withLock { $0.failed += 1 }
            logger.debug("format upgrade failed", metadata: ["url": "\(url)", "error": "\(error)"])
        }
    }

    /// Whether `entry` is the kept bytes of a format upgrade (the better
    /// answer to a negotiated request), not a variant stored cold.
    static func isUpgrade(_ entry: CacheEntry?) -> Bool {
        entry?.upgrade == .upgraded
    }

    /// Whether the cold variant `entry` leaves an upgrade to `better` to
    /// try: to its own format at the slower effort, while its row is open
    /// (not tried, not those bytes already); to another format, unless
    /// that format gave no gain from it (``CacheEntry/noGainFormats``) —
    /// each better format keeps its own outcome (issue 49 item 3). Whether
    /// the other format's variant is kept is the index's to say.
    static func leavesUpgrade(_ entry: CacheEntry, to better: VariantSpec.Format) -> Bool {
        guard let own = format(of: entry) else { return false }
        if own == better { return entry.upgrade == .open }
        return entry.noGainFormats & (1 << noGainBit(better)) == 0
    }

    /// A variant's format, from its spec (`100x100,contain,jpeg,q80`).
    static func format(of entry: CacheEntry) -> VariantSpec.Format? {
        entry.spec.flatMap { spec in spec.split(separator: ",").lazy.compactMap { VariantSpec.Format(rawValue: String($0)) }.first }
    }

    /// A format's bit in ``CacheEntry/noGainFormats`` (its place in
    /// `VariantSpec.Format.allCases`: stored, so never reordered).
    static func noGainBit(_ format: VariantSpec.Format) -> Int {
        VariantSpec.Format.allCases.firstIndex(of: format)!
    }

    /// Upgrades ended since the pipeline opened, by outcome (for /metrics).
    package var upgradeCounts: UpgradeCounts { upgrades.withLock { $0 } }

    /// Returns once no format upgrade waits or runs (tests, benchmarks).
    package func waitForUpgrades() async {
        await background.waitUntilIdle(.formatUpgrade)
    }
}

/// Format upgrades ended, by outcome.
package struct UpgradeCounts: Sendable, Equatable {
    package var kept = 0
    package var noGain = 0
    package var failed = 0

    package init(kept: Int = 0, noGain: Int = 0, failed: Int = 0) {
        self.kept = kept
        self.noGain = noGain
        self.failed = failed
    }
}
