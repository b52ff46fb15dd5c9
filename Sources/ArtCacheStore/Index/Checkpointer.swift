import ArtCacheCore
import Foundation
internal import GRDB
import Logging

/// Copies the index's write-ahead log back into the database file off the
/// commit thread. SQLite's own checkpoint runs inside the commit that
/// crosses 1,000 WAL pages: on a prefetch of 40 KB originals (inline, so
/// every byte goes through the WAL) it was half of the commit thread's work,
/// and the commit thread is what a prefetch waits on. Here a connection of
/// its own runs a PASSIVE checkpoint (it never waits for readers or the
/// writer) on its own queue once ``threshold`` bytes were committed since
/// the last one, while the next batches commit.
///
/// Bounded: one checkpoint at a time; the writer's connection keeps SQLite's
/// automatic checkpoint at ``writerFallbackPages`` (4× as far), so a WAL this
/// one falls behind on (or writes it does not hear of: folds, evictions) is
/// still checkpointed by the writer, as before. Stopped by ``close()``,
/// which waits for the one in flight.
final class Checkpointer: Sendable {
    /// Bytes committed between two checkpoints: SQLite's default interval (1,000 pages of 4 KB).
    static let threshold = 4_096_000
    /// The writer's own automatic checkpoint, the bound behind this one (`PRAGMA wal_autocheckpoint`).
    static let writerFallbackPages = 4_000

    private struct State {
        var committed = 0
        var running = false
        var closed = false
        var checkpoints = 0
    }

    private let queue: DatabaseQueue
    private let state = Locked(State())

    /// Opens the connection it checkpoints through (the index at `path`, already open and in WAL mode).
    init(path: String) throws {
        var configuration = GRDB.Configuration()
        configuration.label = "artcache.checkpoint"
        configuration.foreignKeysEnabled = false
        // It never writes rows: its connection never checkpoints by itself.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        queue = try DatabaseQueue(path: path, configuration: configuration)
    }

    /// The checkpointer of the index `db` at `path`, the writer's own
    /// checkpoint moved ``writerFallbackPages`` out; nil (the writer
    /// checkpoints, as SQLite does by default) when its connection cannot be opened.
    static func start(for db: DatabasePool, path: String, logger: Logger) -> Checkpointer? {
        do {
            let checkpointer = try Checkpointer(path: path)
            try db.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_autocheckpoint = \(writerFallbackPages)") }
            return checkpointer
        } catch {
            logger.warning("checkpoints stay on the commit thread", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Checkpoints started so far (tests).
    var checkpoints: Int { state.withLock { $0.checkpoints } }

    /// `bytes` more were committed (a batch's rows and inline blobs): a
    /// checkpoint starts once they add up to ``threshold``, unless one runs.
    func committed(_ bytes: Int) {
        let start = state.withLock { state -> Bool in
            state.committed += bytes
            guard !state.running, !state.closed, state.committed >= Self.threshold else { return false }
            state.committed = 0
            state.running = true
            state.checkpoints += 1
            return true
        }
        guard start else { return }
        let state = self.state
        queue.asyncWriteWithoutTransaction { db in
            // PASSIVE: as many frames as no reader still needs; another
            // process's checkpoint in progress makes this one a no-op.
            _ = try? Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)")
            state.withLock { $0.running = false }
        }
    }

    /// No checkpoint starts any more; returns once the one in flight ended.
    func close() {
        state.withLock { $0.closed = true }
        try? queue.writeWithoutTransaction { _ in }  // behind the one in flight, on its serial queue
        try? queue.close()
    }
}
