import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Orders blob deletion with `verify`: a process that deletes blob files
/// after its commit (replaced blobs, eviction, purge, a failed batch's
/// renames) holds `<cache>/cleanup.lock` shared from before its transaction
/// until its files are gone; `verify` takes it exclusively to confirm what
/// it found. So verify never reports a file a commit just unnamed (and is
/// about to delete) as an orphan, nor a row just deleted as a missing blob.
///
/// Each hold opens the file anew: flock belongs to an open file
/// description, so holders in one process (threads) exclude each other as
/// holders in different processes do. Always taken before SQLite's write
/// lock, never while holding it: no lock-order cycle.
struct CleanupLock: Sendable {
    let path: String
    let mode: mode_t

    func shared<T>(_ body: () throws -> T) throws -> T { try holding(LOCK_SH, body) }
    func exclusive<T>(_ body: () throws -> T) throws -> T { try holding(LOCK_EX, body) }

    private func holding<T>(_ operation: Int32, _ body: () throws -> T) throws -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode)
        FileMode.settle(fd, mode)
        guard fd >= 0 else { throw StoreError.io("cannot open \(path)", errno: errno) }
        defer { close(fd) }  // releases the flock
        while flock(fd, operation) != 0 {
            guard errno == EINTR else { throw StoreError.io("cannot lock \(path)", errno: errno) }
        }
        return try body()
    }
}
