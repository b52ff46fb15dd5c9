import ArtCacheCore
import Foundation
internal import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// The `download_lease` table: which process is downloading a URL now, so
/// that two processes on one cache (a `prefetch` while `serve` runs, two
/// prefetches) download it once. A lease names its holder (pid, and a token
/// per opened store) and lapses at its expiry or when its holder's process
/// is gone (a pid on this machine: processes sharing a cache share a host).
/// The store's (``CacheStore/leases``).
package final class DownloadLeases: Sendable {
    /// What ``claim(key:url:for:waited:now:)`` found.
    package enum Claim: Sendable, Equatable {
        /// The lease is this store's now (or already was).
        case acquired
        /// Another live holder has it until `until`.
        case held(pid: Int32, until: Date)
        /// Its holder (another store) gave it up moments ago with this
        /// failure, the result a process waiting on it takes as its own.
        case failed(pid: Int32, reason: String, message: String)
    }

    let db: DatabasePool
    /// This store's holder token: two stores in one process do not take
    /// each other's leases for their own.
    let token = UUID().uuidString
    let pid = getpid()
    /// Claims and releases waiting for the writer, and whether a batch is
    /// on its way: they are written together, one transaction for all that
    /// came while the one before committed (two transactions per download
    /// were most of a prefetch's index work: each a BEGIN, a COMMIT and
    /// their WAL frames).
    /// `batches`: the transactions they took so far.
    private let pending = Locked<(ops: [Op], draining: Bool, batches: Int)>(([], false, 0))
    /// Transactions the claims and releases took so far, and operations waiting now (tests).
    package var activity: (batches: Int, waiting: Int) { pending.withLock { ($0.batches, $0.ops.count) } }

    init(db: DatabasePool) { self.db = db }

    /// Takes the lease on `key` for `duration`, unless a live holder other
    /// than this store has one in force. `waited`: the caller found it held
    /// before, and takes the failure its holder left as its own result
    /// (a caller that did not wait downloads anew).
    package func claim(key: String, url: String, for duration: TimeInterval, waited: Bool = false,
                       now: Date = Date()) async throws -> Claim {
        try await withCheckedThrowingContinuation { continuation in
            submit(.claim(key: key, url: url, duration: duration, waited: waited, now: now, continuation))
        }
    }

    /// Gives the lease on `key` up, if this store holds it. `linger`: it
    /// stays for that long instead, with `failure` (the result the processes
    /// waiting on it take), or without (an original stored behind the
    /// answer, not committed yet: they keep waiting for it, not downloading).
    /// Runs even when the calling task is cancelled (a cancelled download
    /// gives its lease up too), on GRDB's writer queue.
    package func release(key: String, failure: (reason: String, message: String)? = nil, linger: TimeInterval = 0,
                         now: Date = Date()) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            submit(.release(key: key, failure: failure, linger: linger, now: now, continuation))
        }
    }

    /// A claim or a release, and who waits for it.
    private enum Op: Sendable {
        case claim(key: String, url: String, duration: TimeInterval, waited: Bool, now: Date, CheckedContinuation<Claim, Error>)
        case release(key: String, failure: (reason: String, message: String)?, linger: TimeInterval, now: Date,
                     CheckedContinuation<Void, Error>)
    }

    /// Queues `op`; starts a batch unless one is on its way (it takes `op`
    /// along, or the one after it does).
    private func submit(_ op: Op) {
        let start = pending.withLock { state -> Bool in
            state.ops.append(op)
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
        if start { writeBatch() }
    }

    /// One transaction for every operation waiting when the writer gets to
    /// it, in their order; each caller resumed after the commit (or with
    /// its error: a failed transaction fails the whole batch). Then the
    /// next batch, if more came meanwhile.
    private func writeBatch() {
        let (pending, taken, pid, token) = (self.pending, Locked<[Op]>([]), self.pid, self.token)
        db.asyncWrite({ db -> [Claim?] in
            let batch = pending.withLock { state -> [Op] in
                defer { state.ops = [] }
                state.batches += 1
                return state.ops
            }
            taken.withLock { $0 = batch }
            return try batch.map { op -> Claim? in
                switch op {
                case .claim(let key, let url, let duration, let waited, let now, _):
                    return try Self.claim(db, key: key, url: url, duration: duration, waited: waited, now: now, pid: pid, token: token)
                case .release(let key, let failure, let linger, let now, _):
                    try Self.release(db, key: key, token: token, failure: failure, linger: linger, now: now)
                    return nil
                }
            }
        }, completion: { [self] _, result in
            let batch = taken.withLock { $0 }
            for (index, op) in batch.enumerated() {
                switch (op, result) {
                case (.claim(_, _, _, _, _, let continuation), .success(let claims)): continuation.resume(returning: claims[index]!)
                case (.claim(_, _, _, _, _, let continuation), .failure(let error)): continuation.resume(throwing: error)
                case (.release(_, _, _, _, let continuation), .success): continuation.resume()
                case (.release(_, _, _, _, let continuation), .failure(let error)): continuation.resume(throwing: error)
                }
            }
            let more = pending.withLock { state -> Bool in
                if state.ops.isEmpty { state.draining = false }
                return state.draining
            }
            if more { writeBatch() }
        })
    }

    private static func claim(_ db: Database, key: String, url: String, duration: TimeInterval, waited: Bool, now: Date,
                              pid: Int32, token: String) throws -> Claim {
        if let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT holder_pid, holder, expires_at, failure_reason, failure_message FROM download_lease WHERE key = ?
            """), arguments: [key]) {
            let holderPID: Int32 = row["holder_pid"]
            let holder: String = row["holder"]
            let until = Date(timeIntervalSince1970: row["expires_at"])
            if holder != token, until > now {
                if let reason: String = row["failure_reason"] {
                    if waited { return .failed(pid: holderPID, reason: reason, message: row["failure_message"] ?? reason) }
                } else if isAlive(holderPID) {
                    return .held(pid: holderPID, until: until)
                }
            }
        }
        // Lapsed leases (their holders died, or gave them up with a failure) go here.
        try db.cachedStatement(sql: "DELETE FROM download_lease WHERE expires_at <= ?").execute(arguments: [now.timeIntervalSince1970])
        try db.cachedStatement(sql: """
            INSERT INTO download_lease (key, url, holder_pid, holder, expires_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(key) DO UPDATE SET url = excluded.url, holder_pid = excluded.holder_pid,
                holder = excluded.holder, expires_at = excluded.expires_at, failure_reason = NULL, failure_message = NULL
            """).execute(arguments: [key, url, pid, token, now.addingTimeInterval(duration).timeIntervalSince1970])
        return .acquired
    }

    private static func release(_ db: Database, key: String, token: String, failure: (reason: String, message: String)?,
                                linger: TimeInterval, now: Date) throws {
        if linger > 0 {
            try db.cachedStatement(sql: """
                UPDATE download_lease SET expires_at = ?, failure_reason = ?, failure_message = ?
                WHERE key = ? AND holder = ?
                """).execute(arguments: [now.addingTimeInterval(linger).timeIntervalSince1970, failure?.reason, failure?.message,
                                         key, token])
        } else {
            try db.cachedStatement(sql: "DELETE FROM download_lease WHERE key = ? AND holder = ?").execute(arguments: [key, token])
        }
    }

    /// Leases in the table (tests).
    package func count() async throws -> Int {
        try await db.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM download_lease") ?? 0 }
    }

    /// Whether process `pid` runs (EPERM: it does, as another user's). A
    /// process that has exited but that its parent has not reaped yet (a
    /// zombie: `kill -9` by a script that has not waited for it) still has
    /// its pid, but holds nothing: its `/proc/PID/stat` state is `Z` (or `X`).
    static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0, kill(pid, 0) == 0 || errno == EPERM else { return false }
        return !isZombie(pid)
    }

    /// `/proc/PID/stat`'s state (the field after the command's closing
    /// parenthesis) is `Z` or `X`.
    static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].first { $0 != " " }
        return state == "Z" || state == "X"
    }
}
