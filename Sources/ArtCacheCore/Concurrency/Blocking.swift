import Dispatch
import Foundation

/// Runs blocking work (file I/O, SQLite opens, unlink) on a bounded pool of
/// threads of its own, never on Swift's cooperative thread pool, and never
/// on an unbounded Dispatch queue (which grows a thread per blocked job).
package enum Blocking {
    /// Threads of the pool: enough to overlap disk waits, few enough that a
    /// burst of file work cannot pile up threads. Jobs beyond them wait in order.
    package static let threadCount = max(4, min(16, ProcessInfo.processInfo.activeProcessorCount * 2))
    private static let pool = WorkerThreads(count: threadCount, name: "artcache.blocking-io")

    package static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.run(priority: PriorityHandle(.normal), body)
    }

    /// Jobs waiting for a thread and running (metrics, tests).
    package static var load: (waiting: Int, running: Int) { pool.load }

    /// Returns once the pool's load satisfies `predicate` (tests, no polling).
    package static func waitForLoad(until predicate: @escaping @Sendable ((waiting: Int, running: Int)) -> Bool) async {
        await pool.waitForLoad(until: predicate)
    }
}
