import ArtCacheCore
import Foundation

/// `[cache]`: where the cache lives and how big it may grow.
/// `CacheSettings()` holds the documented defaults of `cache.conf` (the
/// configuration table reads them from here).
public struct CacheSettings: Sendable, Equatable {
    /// An absolute path (the configuration makes a relative one absolute
    /// once, when it is read). Default: `~/.cache/artcache`.
    public var directory: String = CacheSettings.defaultDirectory
    public var maxBytes: Int64 = 2_000_000_000
    public var maxEntries = 1_000_000
    /// Entries not accessed for this long are evicted; 0 disables age eviction.
    public var maxAge: TimeInterval = 30 * 86400
    /// After an eviction the cache is at most this fraction of its limits.
    public var lowWater = 0.9
    public var accessFlushInterval: TimeInterval = 2
    /// Reads batched before their access times are written. Each write
    /// empties the readers' page caches (WAL): at 1M rows, 512 put the
    /// lookup p99 at 1.3-2.7 ms awaited; 4096 at 0.4-0.5 ms (Benchmarks P5).
    public var accessFlushBatch = 4096
    /// Rows of the touch log (the access times of reads by other processes
    /// and of batched flushes) that start a background fold into the index
    /// (`[cache] touch_log_fold_rows`). Lower: the log stays smaller and
    /// folds more often, each fold shorter.
    public var touchLogFoldRows = 131_072
    /// Blobs of at most this many bytes live inside the SQLite database;
    /// larger ones are files under `objects/`. 0: every blob is a file.
    public var inlineMax: Int64 = 65_536
    /// Most puts committed in one transaction (group commit).
    public var writeBatchMax = 256
    /// Most puts a request does not wait for (store-behind: a miss is
    /// answered once rendered, its original and variant commit behind the
    /// answer). A put that finds them all taken is not written, and counted
    /// (`writes_dropped`). 0: every miss waits for its commit.
    public var writeBehindMax = 512
    /// Added to the nice value of the thread that commits writes
    /// (`[cache] writer_nice`): writes are behind the answers, so on a busy
    /// machine renders and answers go first. 0: the process's priority
    /// (`prefetch` sets it: its writes are its work).
    public var writerNice = 10
    /// How a batch's new blob files reach the disk before the rows naming
    /// them commit (`[cache] sync`); either way on the commit thread, never
    /// on a request's path.
    public var sync = Sync.filesystem
    /// An original expired by less than this is answered at once (source
    /// `stale`) while one revalidation runs behind, at low priority
    /// (`[cache] stale_while_revalidate`; the origin's own
    /// `stale-while-revalidate=` wins). 0: expired entries wait for the origin.
    public var staleWhileRevalidate: TimeInterval = 86400
    /// An expired original whose origin answers 5xx is served for this long
    /// past its expiry, then the error is (`[cache] stale_if_error`; the
    /// origin's `stale-if-error=` wins). A network failure serves it without limit.
    public var staleIfError: TimeInterval = 7 * 86400
    /// The longest heuristic freshness (`[cache] heuristic_max`): a
    /// response with no Cache-Control lifetime and no Expires is fresh for
    /// 10% of the time since its Last-Modified, at most this (RFC 9111 §4.2.2).
    public var heuristicMax: TimeInterval = 86400
    /// How long a response with no Cache-Control lifetime, no Expires and
    /// no Last-Modified is fresh (`[cache] default_ttl`). 0: revalidated
    /// before each use.
    public var defaultTTL: TimeInterval = 86400
    /// Permission bits of the folders artcache creates (`[cache] mode`);
    /// files get the same bits without execute. Default 0o700: owner only.
    public var mode = 0o700
    /// How an open treats the folder (not a `cache.conf` key: the commands
    /// that only read, `stats` and the like, open ``Access/existing``).
    package var access = Access.create

    /// ``access``.
    package enum Access: Sendable, Equatable {
        /// A missing cache is created; an existing one's folders and index
        /// files get ``CacheSettings/mode``.
        case create
        /// The cache must be there (its index file), else the open fails
        /// (`no cache at DIR`) having created nothing; no mode is changed:
        /// what the open itself creates (lock files) gets the cache folder's own bits.
        case existing
    }

    /// `[cache] sync`.
    public enum Sync: String, Sendable, Equatable, CaseIterable {
        /// One syncfs(2) of the cache's filesystem per group commit: the
        /// batch's files and renames together (Benchmarks: the cheaper one).
        /// It also flushes other programs' pending writes on that filesystem.
        case filesystem
        /// fdatasync(2) of each new file, then fsync(2) of each shard folder
        /// renamed into: for a cache sharing a busy filesystem.
        case files
    }

    /// The documented defaults of `cache.conf`; set the fields to change them.
    public init() {}

    /// `[cache] directory` as documented, before `~` is expanded.
    package static let documentedDirectory = "~/.cache/artcache"

    /// ``documentedDirectory`` with `~` expanded from `$HOME`.
    static var defaultDirectory: String {
        (ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()) + "/.cache/artcache"
    }

    /// `0700`, `750`, `0o770`: octal permission bits the owner keeps rwx of; nil otherwise.
    public static func parseMode(_ text: String) -> Int? {
        var digits = Substring(text.trimmingCharacters(in: .whitespaces))
        if digits.hasPrefix("0o") { digits = digits.dropFirst(2) }
        guard (3...4).contains(digits.count), let mode = Int(digits, radix: 8), mode & 0o700 == 0o700, mode <= 0o777 else {
            return nil
        }
        return mode
    }
}
