import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

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

    /// The event is yielded (and the stream finished) under the lock: two
    /// items recorded at once reach the stream in the order of their `done`
    /// counts, and no item's event can come after the stream finished.
    /// (`yield` and `finish` only enqueue; they never call back into this.)
    func record(_ index: Int, _ item: PrefetchItem) {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard s.items[index] == nil else {
                continuation.yield(.item(index: index, item: item, progress: Self.progress(s, started)))
                return []
            }
            s.items[index] = item
            s.done += 1
            s.summary.add(item)
            let finished = s.done == s.items.count
            if finished {
                s.summary.seconds = Date().timeIntervalSince(started)
                // In result order, as the items are, not in the order they finished.
                s.summary.failedRenders = s.items.flatMap { $0?.failedRenders ?? [] }
            }
            continuation.yield(.item(index: index, item: item, progress: Self.progress(s, started)))
            guard finished else { return [] }
            continuation.finish()
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
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
        case .success(.cached), .success(.stale): cached += 1  // stale: the origin unreachable or failing
        case .success(.revalidated): revalidated += 1
        case .success(.downloaded): downloaded += 1
        case .success(.uncacheable): uncacheable += 1
        case .success(.tier2): fromTier2 += 1
        case .failure(let error) where error.code == .notAnImage: refused += 1
        case .failure(let error):
            failed += 1
            failures[error.reason, default: 0] += 1
        }
    }
}
