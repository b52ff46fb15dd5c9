import Foundation

/// The outcome of prefetching a list of URLs. Encoded with snake_case keys:
/// this is the stable `prefetch --json` shape documented in the README.
public struct PrefetchSummary: Sendable, Codable, Equatable {
    public var requested = 0
    /// Fresh in the cache already.
    public var cached = 0
    public var revalidated = 0
    public var downloaded = 0
    /// Downloaded with a wrong Content-Type that was corrected.
    public var repaired = 0
    /// Answered with something that is not an image (HTML, JSON, empty...).
    public var refused = 0
    /// Downloaded but not kept (`Cache-Control: no-store`).
    public var uncacheable = 0
    /// Failed for any other reason; `failures` has them by reason.
    public var failed = 0
    public var failures: [String: Int] = [:]
    /// Bytes downloaded.
    public var bytes: Int64 = 0
    public var seconds: Double = 0
    /// Thumbnail variants rendered (configured sizes not already cached).
    public var variants = 0
    /// Variants that could not be rendered, by reason (`render_too_large`, ...).
    public var renderFailures: [String: Int] = [:]

    public var succeeded: Bool { failed == 0 && refused == 0 }
}

/// One URL's result, in result-set order.
public struct PrefetchItem: Sendable {
    public let url: String
    public let outcome: Result<FetchOutcome.Source, DownloadError>
    public let entry: CacheEntry?
}

/// Progress while prefetching.
public struct PrefetchProgress: Sendable {
    public let done: Int
    public let total: Int
    public let bytes: Int64
    public let failed: Int
    public let elapsed: TimeInterval
}

private struct Finished: Sendable {
    let index: Int
    let item: PrefetchItem
    let bytes: Int
    let repaired: Bool
    var variantsMade = 0
    var renderFailures: [String: Int] = [:]
}

extension ImagePipeline {
    /// Gets every URL into the cache, `concurrency` at a time (the downloader's
    /// own total and per-host limits hold too). Never throws: every URL ends
    /// in the summary, as cached, downloaded, refused or failed by reason.
    public func prefetch(_ urls: [String], concurrency: Int, variants specs: [VariantSpec] = [],
                         progress: @escaping @Sendable (PrefetchProgress) -> Void = { _ in })
        async -> (summary: PrefetchSummary, items: [PrefetchItem]) {
        let started = Date()
        var summary = PrefetchSummary()
        summary.requested = urls.count
        var items = [PrefetchItem?](repeating: nil, count: urls.count)
        var done = 0
        await withTaskGroup(of: Finished.self) { group in
            var next = 0
            func launch() {
                guard next < urls.count else { return }
                let index = next
                next += 1
                group.addTask { await self.prefetchOne(urls[index], index: index, specs: specs) }
            }
            for _ in 0..<max(1, concurrency) { launch() }
            while let finished = await group.next() {
                items[finished.index] = finished.item
                done += 1
                summary.bytes += Int64(finished.bytes)
                if finished.repaired { summary.repaired += 1 }
                summary.variants += finished.variantsMade
                summary.renderFailures.merge(finished.renderFailures, uniquingKeysWith: +)
                switch finished.item.outcome {
                case .success(.cached): summary.cached += 1
                case .success(.revalidated): summary.revalidated += 1
                case .success(.downloaded): summary.downloaded += 1
                case .success(.uncacheable): summary.uncacheable += 1
                case .failure(let error) where error.code == .notAnImage: summary.refused += 1
                case .failure(let error):
                    summary.failed += 1
                    summary.failures[error.reason, default: 0] += 1
                }
                progress(PrefetchProgress(done: done, total: urls.count, bytes: summary.bytes,
                                          failed: summary.failed + summary.refused, elapsed: Date().timeIntervalSince(started)))
                launch()
            }
        }
        try? await store.flush()
        summary.seconds = Date().timeIntervalSince(started)
        return (summary, items.compactMap { $0 })
    }

    private func prefetchOne(_ url: String, index: Int, specs: [VariantSpec]) async -> Finished {
        do {
            let outcome = try await original(url)
            var finished = Finished(index: index, item: PrefetchItem(url: url, outcome: .success(outcome.source), entry: outcome.entry),
                                    bytes: outcome.downloadedBytes, repaired: outcome.repaired)
            // Renders run beside other items' downloads, bounded by the render pool.
            for spec in specs where renderer != nil && outcome.entry != nil {
                do {
                    if try await variant(url, spec: spec).source == .rendered { finished.variantsMade += 1 }
                } catch let error as RenderError {
                    finished.renderFailures[error.reason, default: 0] += 1
                } catch {
                    finished.renderFailures["render_error", default: 0] += 1
                }
            }
            return finished
        } catch {
            let failure: DownloadError
            switch error {
            case let error as DownloadError: failure = error
            case let error as StoreError: failure = DownloadError(error.code == .invalidURL ? .invalidURL : .network, error.message)
            default: failure = DownloadError(.cancelled, "\(url): cancelled")
            }
            return Finished(index: index, item: PrefetchItem(url: url, outcome: .failure(failure), entry: nil), bytes: 0, repaired: false)
        }
    }
}
