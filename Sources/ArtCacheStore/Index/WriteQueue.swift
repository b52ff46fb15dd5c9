import Dispatch
@_spi(Benchmarks) import ArtCacheCore
import Foundation
internal import GRDB

/// One put waiting for its group commit.
struct PendingPut: Sendable {
    /// The row to write (`blob` nil: the bytes go inline).
    var entry: CacheEntry
    /// The bytes, when inline.
    var inlineData: Data?
    /// The synced temp file holding the bytes, when they go to a file.
    var temporary: String?
    /// Runs in the put's savepoint before the row is written, with the row it
    /// replaces and the new one; returns blob files to delete after commit.
    var extra: @Sendable (Database, _ old: CacheEntry?, _ new: CacheEntry) throws -> [String]
}

/// Group commit: puts from concurrent writers of this process are committed
/// together, in one transaction, on one thread of the queue's own.
///
/// The first put to arrive while no commit runs starts one at once (no
/// waiting when idle); puts arriving meanwhile queue and all go in the next
/// commit, at most `maxBatch` at a time. So a put waits at most for the
/// commit in progress, and N concurrent puts cost about one commit, not N.
/// Each put runs in its own savepoint: one failing (say, its parent evicted)
/// does not undo the others. Several processes each batch their own puts and
/// take SQLite's write lock in turn.
final class WriteQueue: Sendable {
    typealias Commit = @Sendable ([PendingPut]) -> [Result<CacheEntry, StoreError>]

    private struct Waiting: Sendable {
        let put: PendingPut
        let continuation: CheckedContinuation<CacheEntry, any Error>
    }

    private struct State: Sendable {
        var waiting: [Waiting] = []
        var draining = false
        var puts = 0
        var commits = 0
    }

    private struct Handlers: Sendable {
        let commit: Commit
        let afterBatch: @Sendable () -> Void
    }

    private let state = Locked(State())
    private let handlers = Locked<Handlers?>(nil)
    private let thread = DispatchQueue(label: "artcache.store.commit", qos: .userInitiated)
    private let maxBatch: Int

    init(maxBatch: Int) {
        self.maxBatch = max(1, maxBatch)
    }

    /// Sets what a batch runs: `commit` writes it; `afterBatch` runs on the
    /// commit thread after each batch commits (eviction), outside any
    /// transaction, before the batch's writers resume. Set once, by the owner.
    func attach(commit: @escaping Commit, afterBatch: @escaping @Sendable () -> Void) {
        handlers.withLock { $0 = Handlers(commit: commit, afterBatch: afterBatch) }
    }

    /// Puts so far and the transactions they took.
    var activity: (puts: Int, commits: Int) { state.withLock { ($0.puts, $0.commits) } }

    /// Queues `put` and returns once its batch committed (or its savepoint failed).
    func submit(_ put: PendingPut) async throws -> CacheEntry {
        try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.waiting.append(Waiting(put: put, continuation: continuation))
                state.puts += 1
                guard !state.draining else { return false }
                state.draining = true
                return true
            }
            if start { thread.async { self.drain() } }
        }
    }

    private func drain() {
        while true {
            let batch = state.withLock { state -> [Waiting] in
                let batch = Array(state.waiting.prefix(maxBatch))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.draining = false } else { state.commits += 1 }
                return batch
            }
            guard !batch.isEmpty else { return }
            let puts = batch.map(\.put)
            let handlers = self.handlers.withLock { $0 }
            let results = handlers?.commit(puts)
                ?? puts.map { _ in .failure(StoreError(.closed, "the cache is closed: nothing was written")) }
            // Limits are enforced before the writers hear back: a put returns
            // with the cache within its limits.
            handlers?.afterBatch()
            for (waiting, result) in zip(batch, results) {
                waiting.continuation.resume(with: result.mapError { $0 as any Error })
            }
        }
    }
}
