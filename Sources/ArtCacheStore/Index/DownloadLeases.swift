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

    init(db: DatabasePool) { self.db = db }

    /// Takes the lease on `key` for `duration`, unless a live holder other
    /// than this store has one in force. `waited`: the caller found it held
    /// before, and takes the failure its holder left as its own result
    /// (a caller that did not wait downloads anew).
    package func claim(key: String, url: String, for duration: TimeInterval, waited: Bool = false,
                       now: Date = Date()) async throws -> Claim {
        let (pid, token) = (self.pid, self.token)
        return try await db.write { db in
            if let row = try Row.fetchOne(db, sql: """
                SELECT holder_pid, holder, expires_at, failure_reason, failure_message FROM download_lease WHERE key = ?
                """, arguments: [key]) {
                let holderPID: Int32 = row["holder_pid"]
                let holder: String = row["holder"]
                let until = Date(timeIntervalSince1970: row["expires_at"])
                if holder != token, until > now {
                    if let reason: String = row["failure_reason"] {
                        if waited { return .failed(pid: holderPID, reason: reason, message: row["failure_message"] ?? reason) }
                    } else if Self.isAlive(holderPID) {
                        return .held(pid: holderPID, until: until)
                    }
                }
            }
            // Lapsed leases (their holders died, or gave them up with a failure) go here.
            try db.execute(sql: "DELETE FROM download_lease WHERE expires_at <= ?", arguments: [now.timeIntervalSince1970])
            try db.execute(sql: """
                INSERT INTO download_lease (key, url, holder_pid, holder, expires_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET url = excluded.url, holder_pid = excluded.holder_pid,
                    holder = excluded.holder, expires_at = excluded.expires_at, failure_reason = NULL, failure_message = NULL
                """, arguments: [key, url, pid, token, now.addingTimeInterval(duration).timeIntervalSince1970])
            return .acquired
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
        let token = self.token
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            db.asyncWrite({ db in
                try Self.release(db, key: key, token: token, failure: failure, linger: linger, now: now)
            }, completion: { _, result in continuation.resume(with: result) })
        }
    }

    private static func release(_ db: Database, key: String, token: String, failure: (reason: String, message: String)?,
                                linger: TimeInterval, now: Date) throws {
        if linger > 0 {
            try db.execute(sql: """
                UPDATE download_lease SET expires_at = ?, failure_reason = ?, failure_message = ?
                WHERE key = ? AND holder = ?
                """, arguments: [now.addingTimeInterval(linger).timeIntervalSince1970, failure?.reason, failure?.message,
                                 key, token])
        } else {
            try db.execute(sql: "DELETE FROM download_lease WHERE key = ? AND holder = ?", arguments: [key, token])
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
