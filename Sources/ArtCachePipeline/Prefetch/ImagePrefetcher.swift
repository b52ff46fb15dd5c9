import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

/// Prefetches the images of result sets at low priority, a bounded number at
/// once, so that the rows a user sees (requested at normal or high priority)
/// overtake them in the downloader and render queues.
///
/// ```swift
/// let prefetcher = ImagePrefetcher(pipeline: pipeline)
/// let batch = prefetcher.start(urls: try ResultSet.parse(json).urls)
/// for await event in batch.events { ... }     // optional: per-item progress
/// let summary = await batch.summary
/// prefetcher.stop(urls: urlsScrolledAway)      // or stopAll()
/// ```
public final class ImagePrefetcher: Sendable {
    public let pipeline: ImagePipeline
    public let priority: ImagePriority
    public let concurrency: Int
    /// Thumbnails made for every original started by URL.
    public let variants: [VariantSpec]
    /// Items that may wait to start (default ``defaultMaxWaiting``): past
    /// it, the oldest waiting items are dropped (their batches report them
    /// `cancelled`): what a user scrolled past matters least.
    public let maxWaiting: Int

    /// The default bound on waiting items: 100,000.
    public static let defaultMaxWaiting = 100_000

    private struct Job: Sendable {
        let batch: PrefetchBatch
        let index: Int
        let url: String
        /// Normalized once, for stopping by URL and for the load (nil: invalid, fails at once).
        let normalized: NormalizedURL?
        var key: String? { normalized?.key.hex }
        /// nil: the original plus `variants`; else exactly this request.
        let request: ImageRequest?
    }

    private struct State {
        /// Waiting jobs in arrival order from `head` on (taking the first is
        /// O(1); the consumed front is dropped once it is half the array).
        var queue: [Job] = []
        var head = 0
        var running: [UUID: (job: Job, task: Task<Void, Never>)] = [:]

        var waitingCount: Int { queue.count - head }

        mutating func takeFirst() -> Job? {
            guard head < queue.count else { return nil }
            let job = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 1024, head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return job
        }

        /// The oldest `count` waiting jobs, taken out.
        mutating func takeOldest(_ count: Int) -> ArraySlice<Job> {
            let taken = queue[head..<head + count]
            head += count
            return taken
        }
    }

    private let state = Locked(State())

    /// - Parameters:
    ///   - pipeline: the pipeline that loads and stores the images.
    ///   - priority: the priority of every prefetch (rows a user sees ask higher).
    ///   - concurrency: items at once (default `[download] concurrency`).
    ///   - variants: thumbnails per original started by URL (default `[thumbnails] sizes`).
    ///   - maxWaiting: items that may wait to start; the oldest beyond it are dropped.
    public init(pipeline: ImagePipeline, priority: ImagePriority = .low, concurrency: Int? = nil,
                variants: [VariantSpec]? = nil, maxWaiting: Int = ImagePrefetcher.defaultMaxWaiting) {
        self.pipeline = pipeline
        self.priority = priority
        self.concurrency = max(1, concurrency ?? pipeline.configuration.download.concurrency)
        self.variants = variants ?? pipeline.configuration.thumbnails.sizes
        self.maxWaiting = max(1, maxWaiting)
    }

    /// Starts prefetching the originals of `urls` and their `variants`.
    @discardableResult
    public func start(urls: [String]) -> PrefetchBatch {
        enqueue(urls.map { ($0, nil) })
    }

    /// Starts prefetching exactly what each request names (an original or one
    /// thumbnail), at this prefetcher's priority.
    @discardableResult
    public func start(_ requests: [ImageRequest]) -> PrefetchBatch {
        enqueue(requests.map { ($0.url, $0) })
    }

    /// Stops the items of these URLs, waiting or running (their batch reports them cancelled).
    public func stop(urls: [String]) {
        let keys = Set(urls.compactMap { try? NormalizedURL($0).key.hex })
        stop { job in job.key.map(keys.contains) ?? false }
    }

    public func stop(_ requests: [ImageRequest]) { stop(urls: requests.map(\.url)) }

    public func stopAll() { stop { _ in true } }

    private func enqueue(_ items: [(url: String, request: ImageRequest?)]) -> PrefetchBatch {
        let batch = PrefetchBatch(total: items.count)
        let jobs = items.enumerated().map { index, item in
            Job(batch: batch, index: index, url: item.url, normalized: try? NormalizedURL(item.url), request: item.request)
        }
        let dropped = state.withLock { s -> ArraySlice<Job> in
            s.queue += jobs
            let overflow = s.waitingCount - maxWaiting
            guard overflow > 0 else { return [] }
            return s.takeOldest(overflow)
        }
        for job in dropped {
            let error = ArtCacheError(.cancelled, "\(job.url): dropped: more than \(maxWaiting) prefetches were waiting")
            job.batch.record(job.index, Self.failed(job.url, error))
        }
        pump()
        return batch
    }

    private func stop(where matches: (Job) -> Bool) {
        let (dropped, running) = state.withLock { s -> ([Job], [Task<Void, Never>]) in
            s.queue.removeFirst(s.head)
            s.head = 0
            let dropped = s.queue.filter(matches)
            s.queue.removeAll(where: matches)
            return (dropped, s.running.values.filter { matches($0.job) }.map(\.task))
        }
        for job in dropped {
            job.batch.record(job.index, Self.failed(job.url, ArtCacheError.cancelled(job.url)))
        }
        for task in running { task.cancel() }
    }

    /// Starts queued jobs while fewer than `concurrency` run.
    private func pump() {
        while true {
            let started = state.withLock { s -> Bool in
                guard s.running.count < concurrency, let job = s.takeFirst() else { return false }
                let id = UUID()
                let task = Task { [self] in
                    let item = await run(job)
                    job.batch.record(job.index, item)
                    state.withLock { _ = $0.running.removeValue(forKey: id) }
                    pump()
                }
                s.running[id] = (job, task)
                return true
            }
            if !started { return }
        }
    }

    private func run(_ job: Job) async -> PrefetchItem {
        let handle = PriorityHandle(priority)
        do {
            if let request = job.request {
                // Through every tier, so a front's `cachedImage` hits afterwards.
                let response = try await pipeline.load(request, priority: handle)
                let source: FetchOutcome.Source = switch response.source {
                case .network: .downloaded
                case .revalidated: .revalidated
                case .stale: .stale
                case .tier2: .tier2
                case .memory, .disk, .placeholder: .cached
                }
                return PrefetchItem(url: job.url, outcome: .success(source), entry: response.entry,
                                    bytes: source == .downloaded && request.size == nil ? response.data.count : 0,
                                    repaired: response.repaired, variantsMade: response.rendered ? 1 : 0, renderFailures: [:])
            }
            let url = try job.normalized ?? NormalizedURL(job.url)  // nil: its error, thrown here
            let outcome: FetchOutcome
            do {
                // Prefetch is the work behind answers: it revalidates an expired
                // original itself instead of answering stale.
                outcome = try await pipeline.original(url, pixels: variants.map(\.longerSide).max(), staleOK: false,
                                                      priority: handle)
                pipeline.store.recordRequest(hit: outcome.source == .cached)  // one per item, as requests count
            } catch {
                if !(error is CancellationError), (error as? ArtCacheError)?.code != .cancelled {
                    pipeline.store.recordRequest(hit: false)
                }
                throw error
            }
            var made = 0
            var renderFailures: [String: Int] = [:]
            var failedRenders: [FailedRender] = []
            // Renders run beside other items' downloads, bounded by the render
            // pool; the missing sizes of one original share one decode.
            let results = await pipeline.makeVariants(url, specs: variants, from: outcome, priority: handle)
            for (spec, result) in zip(variants, results) {
                switch result {
                case .success(let rendered):
                    if rendered { made += 1 }
                case .failure(let failure):
                    if failure.code == .cancelled { throw failure }
                    let reason = (failure.underlying as? RenderError)?.reason ?? RenderError.reasonPrefix + failure.reason
                    renderFailures[reason, default: 0] += 1
                    failedRenders.append(FailedRender(url: job.url, size: "\(spec.width)x\(spec.height)", reason: reason,
                                                      message: failure.message))
                }
            }
            var item = PrefetchItem(url: job.url, outcome: .success(outcome.source), entry: outcome.entry,
                                    bytes: outcome.downloadedBytes, repaired: outcome.repaired, variantsMade: made,
                                    renderFailures: renderFailures)
            item.failedRenders = failedRenders
            return item
        } catch {
            return Self.failed(job.url, ArtCacheError(any: error, context: job.url))
        }
    }

    static func failed(_ url: String, _ error: ArtCacheError) -> PrefetchItem {
        PrefetchItem(url: url, outcome: .failure(error), entry: nil, bytes: 0, repaired: false, variantsMade: 0, renderFailures: [:])
    }
}

extension ImagePipeline {
    /// Gets every URL into the cache, `concurrency` at a time (the downloader's
    /// own total and per-host limits hold too), at low priority. Never throws:
    /// every URL ends in the summary, as cached, downloaded, refused or failed
    /// by reason.
    public func prefetch(_ urls: [String], concurrency: Int? = nil, variants: [VariantSpec]? = nil,
                         priority: ImagePriority = .low,
                         progress: @escaping @Sendable (PrefetchProgress) -> Void = { _ in })
        async -> (summary: PrefetchSummary, items: [PrefetchItem]) {
        let prefetcher = ImagePrefetcher(pipeline: self, priority: priority, concurrency: concurrency, variants: variants,
                                         maxWaiting: max(ImagePrefetcher.defaultMaxWaiting, urls.count))
        let batch = prefetcher.start(urls: urls)
        for await case .item(_, _, let current) in batch.events { progress(current) }
        let summary = await batch.summary
        do {
            try await store.flush()
        } catch {
            logger.error("cannot record access times", metadata: ["error": "\(error)"])
        }
        return (summary, await batch.items)
    }
}
