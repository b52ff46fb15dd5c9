import Dispatch
import ArtCacheCore
import Foundation
internal import GRDB

/// One put waiting for its group commit.
struct PendingPut: Sendable {
    /// The row to write (`blob` nil: the bytes go inline).
    var entry: CacheEntry
    /// The bytes, when inline.
    var inlineData: Data?
    /// The bytes, when they go to a file: the commit thread writes them to
    /// a temp file (no request thread ever writes or syncs a blob file).
    var fileData: Data?
    /// Runs in the put's savepoint before the row is written, with the row it
    /// replaces and the new one; returns blob files to delete after commit.
    var extra: @Sendable (Database, _ old: CacheEntry?, _ new: CacheEntry) throws -> [String]
}

/// Group commit: puts from concurrent writers of this process are committed
/// together, in one transaction, on one thread of the queue's own.
///
/// That thread runs at a lower CPU priority (nice +`niceness`): writes are
/// behind the answers, so on a busy machine renders and answers go first
/// and the writes catch up when a core is free; the queue of puts behind
/// is bounded (`write_behind_max`), so a writer that never catches up drops
/// and counts, it never grows without bound.
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
        let afterBatch: @Sendable ([PendingPut]) -> Void
    }

    private let state = Locked(State())
    private let handlers = Locked<Handlers?>(nil)
    /// Signalled once per start of a drain, and by `deinit` (the thread ends).
    private let wakeup = DispatchSemaphore(value: 0)
    private let maxBatch: Int

    /// `niceness`: added to the commit thread's nice value (0: as the process).
    init(maxBatch: Int, niceness: Int32 = 0) {
        self.maxBatch = max(1, maxBatch)
        // The thread holds the queue weakly: the queue's owner releasing it
        // ends the thread (deinit wakes it to find nothing).
        let wakeup = self.wakeup
        let thread = Thread { [weak self] in
            // Niced before it is named: a thread found by its name already
            // has its priority (StoreV2Tests looks threads up by name).
            ThreadPriority.lowerThisThread(by: niceness)
            ThreadName.set("artcache.commit")
            while true {
                wakeup.wait()
                guard let queue = self else { return }
                queue.drain()
            }
        }
        thread.start()
    }

    deinit { wakeup.signal() }

    /// Sets what a batch runs: `commit` writes it; `afterBatch` runs on the
    /// commit thread after each batch commits (eviction), outside any
    /// transaction, before the batch's writers resume. Set once, by the owner.
    func attach(commit: @escaping Commit, afterBatch: @escaping @Sendable ([PendingPut]) -> Void) {
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
            if start { wakeup.signal() }
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
            handlers?.afterBatch(puts)
            for (waiting, result) in zip(batch, results) {
                waiting.continuation.resume(with: result.mapError { $0 as any Error })
            }
        }
    }
}
