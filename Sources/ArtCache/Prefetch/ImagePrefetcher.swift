@_spi(Benchmarks) import ArtCacheCore
@_spi(Benchmarks) import ArtCacheFetch
@_spi(Benchmarks) import ArtCacheRender
@_spi(Benchmarks) import ArtCacheStore
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
    public let outcome: Result<OriginalSource, ArtCacheError>
    package let entry: CacheEntry?
    /// Bytes downloaded for this item.
    public let bytes: Int
    /// The declared Content-Type was wrong and was corrected.
    public let repaired: Bool
    /// Thumbnails rendered now for this item.
    public let variantsMade: Int
    /// Thumbnails that could not be rendered, by reason (`render_decode`, ...).
    public let renderFailures: [String: Int]
}

/// Progress while prefetching a batch.
public struct PrefetchProgress: Sendable {
    public let done: Int
    public let total: Int
    public let bytes: Int64
    public let failed: Int
    public let elapsed: TimeInterval
}

/// What a batch reports while it runs: one event per finished item.
public enum PrefetchEvent: Sendable {
    /// `item` (at `index` in the batch) is done; `progress` counts the batch so far.
    case item(index: Int, item: PrefetchItem, progress: PrefetchProgress)
}

/// Prefetches the images of result sets at low priority, a bounded number at
/// once, so that the rows a user sees (requested at normal or high priority)
/// overtake them in the downloader and render queues.
///
/// ```swift
/// let prefetcher = ImagePrefetcher(pipeline: pipeline)
/// let batch = prefetcher.start(urls: try ResultSetParser.parse(json).urls)
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
        /// Normalized, for stopping by URL (nil: invalid, fails at once).
        let key: String?
        /// nil: the original plus `variants`; else exactly this request.
        let request: ImageRequest?
    }

    private struct State {
        var queue: [Job] = []
        var running: [UUID: (job: Job, task: Task<Void, Never>)] = [:]
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
            Job(batch: batch, index: index, url: item.url, key: try? NormalizedURL(item.url).key.hex, request: item.request)
        }
        let dropped = state.withLock { s -> ArraySlice<Job> in
            s.queue += jobs
            let overflow = s.queue.count - maxWaiting
            guard overflow > 0 else { return [] }
            defer { s.queue.removeFirst(overflow) }
            return s.queue.prefix(overflow)
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
                guard s.running.count < concurrency, !s.queue.isEmpty else { return false }
                let job = s.queue.removeFirst()
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
                case .memory, .disk, .placeholder: .cached
                }
                return PrefetchItem(url: job.url, outcome: .success(source), entry: response.entry,
                                    bytes: source == .downloaded && request.size == nil ? response.data.count : 0,
                                    repaired: response.repaired, variantsMade: response.rendered ? 1 : 0, renderFailures: [:])
            }
            let url = try NormalizedURL(job.url)
            let outcome: FetchOutcome
            do {
                outcome = try await pipeline.original(url, priority: handle)
                pipeline.store.recordRequest(hit: outcome.source == .cached)  // one per item, as requests count
            } catch {
                if !(error is CancellationError), (error as? ArtCacheError)?.code != .cancelled {
                    pipeline.store.recordRequest(hit: false)
                }
                throw error
            }
            var made = 0
            var renderFailures: [String: Int] = [:]
            // Renders run beside other items' downloads, bounded by the render
            // pool; the missing sizes of one original share one decode.
            for result in await pipeline.makeVariants(url, specs: variants, from: outcome, priority: handle) {
                switch result {
                case .success(let rendered):
                    if rendered { made += 1 }
                case .failure(let failure):
                    if failure.code == .cancelled { throw failure }
                    renderFailures[(failure.underlying as? RenderError)?.reason ?? "render_\(failure.reason)", default: 0] += 1
                }
            }
            return PrefetchItem(url: job.url, outcome: .success(outcome.source), entry: outcome.entry,
                                bytes: outcome.downloadedBytes, repaired: outcome.repaired, variantsMade: made,
                                renderFailures: renderFailures)
        } catch {
            return Self.failed(job.url, ArtCacheError(any: error, context: job.url))
        }
    }

    static func failed(_ url: String, _ error: ArtCacheError) -> PrefetchItem {
        PrefetchItem(url: url, outcome: .failure(error), entry: nil, bytes: 0, repaired: false, variantsMade: 0, renderFailures: [:])
    }
}

/// One call's worth of prefetching: its events while it runs, and its
/// summary and items (in the order given) when every item is done.
public final class PrefetchBatch: Sendable {
    private struct State {
        var items: [PrefetchItem?]
        var summary = PrefetchSummary()
        var done = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Locked<State>
    private let started = Date()
    /// One event per finished item, then the stream ends. Single consumer.
    /// Events nobody reads are not kept beyond the newest
    /// ``eventBufferLimit`` (each carries the batch's progress so far).
    public let events: AsyncStream<PrefetchEvent>
    /// Unread events kept: 1,024.
    public static let eventBufferLimit = 1024
    private let continuation: AsyncStream<PrefetchEvent>.Continuation

    init(total: Int) {
        var initial = State(items: Array(repeating: nil, count: total))
        initial.summary.requested = total
        state = Locked(initial)
        (events, continuation) = AsyncStream.makeStream(of: PrefetchEvent.self, bufferingPolicy: .bufferingNewest(Self.eventBufferLimit))
        if total == 0 { continuation.finish() }
    }

    func record(_ index: Int, _ item: PrefetchItem) {
        let (progress, finished, waiters) = state.withLock { s -> (PrefetchProgress, Bool, [CheckedContinuation<Void, Never>]) in
            guard s.items[index] == nil else { return (Self.progress(s, started), false, []) }
            s.items[index] = item
            s.done += 1
            s.summary.add(item)
            let finished = s.done == s.items.count
            if finished { s.summary.seconds = Date().timeIntervalSince(started) }
            let waiters = finished ? s.waiters : []
            if finished { s.waiters = [] }
            return (Self.progress(s, started), finished, waiters)
        }
        continuation.yield(.item(index: index, item: item, progress: progress))
        if finished {
            continuation.finish()
            for waiter in waiters { waiter.resume() }
        }
    }

    private static func progress(_ s: State, _ started: Date) -> PrefetchProgress {
        PrefetchProgress(done: s.done, total: s.items.count, bytes: s.summary.bytes,
                         failed: s.summary.failed + s.summary.refused, elapsed: Date().timeIntervalSince(started))
    }

    /// Waits until every item is done.
    public func wait() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.done == s.items.count { return true }
                s.waiters.append(waiter)
                return false
            }
            if done { waiter.resume() }
        }
    }

    /// The summary, once every item is done.
    public var summary: PrefetchSummary {
        get async {
            await wait()
            return state.withLock { $0.summary }
        }
    }

    /// Every item's result in the order given, once every item is done.
    public var items: [PrefetchItem] {
        get async {
            await wait()
            return state.withLock { $0.items.compactMap { $0 } }
        }
    }
}

extension PrefetchSummary {
    mutating func add(_ item: PrefetchItem) {
        bytes += Int64(item.bytes)
        if item.repaired { repaired += 1 }
        variants += item.variantsMade
        renderFailures.merge(item.renderFailures, uniquingKeysWith: +)
        switch item.outcome {
        case .success(.cached): cached += 1
        case .success(.revalidated): revalidated += 1
        case .success(.downloaded): downloaded += 1
        case .success(.uncacheable): uncacheable += 1
        case .failure(let error) where error.code == .notAnImage: refused += 1
        case .failure(let error):
            failed += 1
            failures[error.reason, default: 0] += 1
        }
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
