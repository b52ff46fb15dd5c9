import ArtCacheCore
import ArtCacheRender
import ArtCacheResultSets
import ArtCacheServiceGrammar
import ArtCacheStore
import Foundation

extension ImagePipeline {
    /// Densities a manifest gives each display size.
    static let manifestDensities = [1, 2, 3]
    /// Placeholders a manifest computes inline (cached originals stored
    /// without one); the rest are `placeholder` jobs behind the answer.
    static let manifestInlinePlaceholders = 16

    /// The manifest of `resultSet` for display `sizes` (CSS pixels): per
    /// item in result order, whether it is cached, its size and placeholder,
    /// and a reference per size at 1×, 2× and 3× — signed service paths
    /// with `signer` (one that has keys), else request descriptors. Never
    /// waits on the network: items not cached are `pending` and handed to
    /// the prefetcher at low priority (with these sizes' 1× and 2×
    /// thumbnails, deduplicated `warm_up` jobs; with `[service] front_url`
    /// and a signer, through the ring's front, so the node that owns each
    /// source warms it: ``FrontWarmer``); a cached original without
    /// its placeholder has it computed now (a small local decode; at most
    /// ``manifestInlinePlaceholders`` per manifest, the rest behind).
    /// `fit`: how thumbnails fill the display boxes (default `[thumbnails] fit`).
    /// `priority`: the class signed into the paths (`pri=high|normal|low`:
    /// a page asks for the rows it shows first high, the rest low); nil:
    /// none (normal). Descriptors carry no class: an in-process page sets
    /// ``ImageRequest/priority`` itself.
    public func manifest(for resultSet: ResultSet, sizes: [ImageSize], fit: VariantSpec.Fit? = nil,
                         signer: ServiceURLSigner? = nil, priority: ImagePriority? = nil) async throws(ArtCacheError) -> ImageManifest {
        let fit = fit ?? configuration.thumbnails.fit
        let maxOutput = configuration.thumbnails.maxOutput
        let failures: [String: RetryItem]
        do {
            // Only this result set's URLs (as given and normalized): one
            // indexed lookup each, whatever the queue's length.
            let urls = resultSet.items.flatMap { item in [item.url] + ((try? NormalizedURL(item.url)).map { [$0.string] } ?? []) }
            failures = try await store.retries.items(urls: urls)
        } catch {
            throw ArtCacheError(any: error, context: "cannot read the retry queue")
        }
        var items: [ImageManifest.Item] = []
        var pending: [String] = []
        var inlineDecodes = 0
        for (index, result) in resultSet.items.enumerated() {
            var variants: [String: [String: ImageManifest.Reference]] = [:]
            for size in sizes {
                var densities: [String: ImageManifest.Reference] = [:]
                for density in Self.manifestDensities {
                    let scaled = Self.scaled(size, density, maxOutput: maxOutput)
                    densities["\(density)x"] = if let signer, signer.signs {
                        ImageManifest.Reference(path: signer.path(for: result.url, options: ThumbnailOptions(size: scaled, fit: fit, priority: priority)))
                    } else {
                        ImageManifest.Reference(url: result.url, size: scaled, fit: fit)
                    }
                }
                variants[size.description] = densities
            }
            let normalized = try? NormalizedURL(result.url)
            var entry: CacheEntry?
            do {
                if let normalized { entry = try await store.entry(forKey: normalized.key) }
            } catch {
                throw ArtCacheError(any: error, context: result.url)
            }
            var info = entry.flatMap(ImageInfo.init(entry:))
            var unrenderable: String?
            if let entry, info == nil {
                // A cached original without its placeholder (an older
                // cache, or one still being computed): computed now for the
                // first few (a small local decode each), behind the answer
                // for the rest, so one large result set costs a bounded
                // amount of decoding. Bytes that cannot be decoded say so.
                if inlineDecodes < Self.manifestInlinePlaceholders {
                    inlineDecodes += 1
                    do {
                        info = try await self.info(for: entry.url, priority: .normal, options: .cacheOnly)
                    } catch where Self.isContentFailure(error) {
                        unrenderable = error.reason
                    } catch {}
                } else {
                    computeIntrinsicsBehind(of: entry)
                }
            }
            if let entry, let normalized, unrenderable == nil {
                unrenderable = await renderFailure(of: entry, url: normalized, info: info, sizes: sizes, fit: fit)
            }
            // Why it failed, when it has: a network failure in the retry
            // queue (tried again by `retry`), a refusal the policy decides
            // from the URL alone, or a permanent answer remembered (404,
            // 410, not an image, a blocked address): none is queued again.
            var reason: String? = unrenderable
            var retryAfter: Int?
            if entry == nil, let normalized {
                if let queued = failures[normalized.string] ?? failures[result.url] {
                    reason = queued.reason
                    let due = queued.lastFailedAt.addingTimeInterval(configuration.download.offlineRetryAfter)
                    retryAfter = max(0, Int(due.timeIntervalSinceNow.rounded(.up)))
                }
                reason = reason ?? configuration.download.refusalReason(of: normalized)
                if reason == nil {
                    do {
                        reason = try await store.negatives.answer(forKey: normalized.key)?.reason
                    } catch {
                        throw ArtCacheError(any: error, context: result.url)
                    }
                }
            }
            let status: ImageManifest.Status = retryAfter != nil ? .retrying
                : normalized == nil || reason != nil ? .failed : entry != nil ? .cached : .pending
            if status == .pending { pending.append(result.url) }
            items.append(ImageManifest.Item(
                index: index, id: result.id, url: result.url, fetchedURL: entry.map { $0.fetchedURL ?? $0.url },
                status: status,
                reason: normalized == nil ? "invalid_url" : reason, retryAfter: retryAfter,
                width: info?.width, height: info?.height, color: info?.color, thumbhash: info?.thumbHashBase64,
                placeholder: info?.placeholderDataURL(), animated: info?.animated, frames: info?.frames, variants: variants))
        }
        if !pending.isEmpty {
            // Each pending original, and its thumbnails at 1x and 2x.
            let scaled = Set(sizes.flatMap { size in
                [1, 2].map { Self.scaled(size, $0, maxOutput: maxOutput) }
            }).sorted { ($0.width, $0.height) < ($1.width, $1.height) }
            let front = frontWarmer(signer: signer)
            for url in pending { warmUp(url, sizes: scaled, fit: fit, through: front) }
        }
        return ImageManifest(format: resultSet.format, items: items)
    }

    /// A display size at `density`, each side at most `maxOutput`.
    static func scaled(_ size: ImageSize, _ density: Int, maxOutput: Int) -> ImageSize {
        ImageSize(width: min(maxOutput, size.width * density), height: min(maxOutput, size.height * density))
    }

    /// Whether `error` is the image's own doing (its bytes or its size),
    /// not the machine's or the network's.
    static func isContentFailure(_ error: ArtCacheError) -> Bool {
        switch error.code {
        case .decode, .unsupported, .tooLarge, .notAnImage: true
        default: false
        }
    }

    /// Why `entry`'s thumbnails cannot be made, when that is known without
    /// rendering: more pixels than `[thumbnails] max_source_pixels`, or a
    /// render of one of the manifest's sizes (1× or 2×) that failed from
    /// these bytes and is remembered (`negative_ttl`). Nil otherwise.
    func renderFailure(of entry: CacheEntry, url: NormalizedURL, info: ImageInfo?, sizes: [ImageSize],
                       fit: VariantSpec.Fit) async -> String? {
        if let info, info.width * info.height > configuration.thumbnails.maxSourcePixels { return "too_large" }
        let maxOutput = configuration.thumbnails.maxOutput
        for size in sizes {
            for density in [1, 2] {
                let scaled = Self.scaled(size, density, maxOutput: maxOutput)
                guard let spec = try? resolve(ImageRequest(url: url.string, size: scaled, fit: fit)).spec else { continue }
                if let failure = await variants.rememberedRenderFailure(url, spec: spec, parent: entry) { return failure.reason }
            }
        }
        return nil
    }

    /// Queues a `warm_up` job for `url`: its original, then each of `sizes`
    /// (one download: the thumbnails render from the stored original), at
    /// low priority with the pools' reserved share for background work. A
    /// warm-up of the same URL, sizes and fit already waiting or running is
    /// not queued again (O(1)), so a result set posted again adds nothing.
    /// Returns what the scheduler did with it.
    @discardableResult
    package func warmUp(_ url: String, sizes: [ImageSize], fit: VariantSpec.Fit, through front: FrontWarmer? = nil) -> BackgroundSubmission {
        guard let normalized = try? NormalizedURL(url) else { return .dropped }
        let spec = (front == nil ? "" : "front;") + sizes.map(\.description).joined(separator: ",") + ";" + fit.rawValue
        let key = BackgroundJobKey(.warmUp, key: normalized.key.hex, spec: spec)
        return background.submit(key, priority: .low, bytes: url.utf8.count + spec.utf8.count) { [self] in
            if let front {  // the node that owns the source stores it, not this one
                _ = await front.warm(url, sizes: sizes, fit: fit)
                return
            }
            let handle = PriorityHandle(.low, background: true)
            let requests = [ImageRequest(url: url, priority: .low)]
                + sizes.map { ImageRequest(url: url, size: $0, fit: fit, priority: .low) }
            for request in requests {
                if Task.isCancelled { return }
                do {
                    _ = try await load(request, priority: handle)
                } catch {
                    // The manifest shows what failed (the retry queue, the
                    // negative table); a failed original fails its sizes too.
                    logger.debug("warm-up failed", metadata: ["url": "\(url)", "error": "\(error)"])
                    return
                }
            }
        }
    }

    /// The ring's front door (`[service] front_url`), when one is set and `signer` signs.
    func frontWarmer(signer: ServiceURLSigner?) -> FrontWarmer? {
        let front = configuration.service.frontURL
        guard !front.isEmpty, let signer, signer.signs else { return nil }
        return FrontWarmer(front: front, signer: signer, downloader: downloader, timeout: configuration.service.timeout, logger: logger)
    }
}
