import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A writer's lock in `tmp/`: `<token>.writer`, created already locked
/// (flock, taken on a temp name before the rename), held while the store is
/// open, removed at deinit. Temp files named `<token>-….part` belong to it:
/// `verify` sees them as live exactly while the flock is held, whatever pid
/// namespace the writer runs in; a killed writer's lock is released by the kernel.
final class WriterLock: Sendable {
    static let suffix = ".writer"
    let token: String
    let path: String
    /// The open lock file; nil once released.
    private let fd: Locked<Int32?>

    init(in folder: String, mode: mode_t) throws(StoreError) {
        let tmp = try DirectoryHandle(path: folder)
        token = String(format: "%016llx", UInt64.random(in: 0...UInt64.max))
        path = folder + "/" + token + Self.suffix
        let staging = "\(token).new"
        let fd = tmp.openFile(staging, flags: O_RDWR | O_CREAT | O_EXCL, mode: mode)
        guard fd >= 0 else { throw StoreError.io("cannot create writer lock in \(folder)", errno: errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0, renameat(tmp.fd, staging, tmp.fd, token + Self.suffix) == 0 else {
            let code = errno
            close(fd)
            tmp.removeFile(staging)
            throw StoreError.io("cannot take writer lock \(path)", errno: code)
        }
        self.fd = Locked(fd)
    }

    deinit { release() }

    /// Removes the lock file and releases the flock (the store's `close()`;
    /// a process that exits without it leaves a released lock that the next
    /// open of the cache sweeps, see `BlobStore.sweepDeadWriters()`).
    func release() {
        fd.withLock { fd in
            guard let open = fd else { return }
            unlink(path)
            close(open)  // releases the flock
            fd = nil
        }
    }

    /// What a sweep found for a writer's token (``claim(token:in:)``).
    enum Claim {
        /// Its flock is held (or being checked by someone else): leave its files alone.
        case alive
        /// No lock file: its writer is gone (a lock file exists for as long as its writer lives).
        case noLockFile
        /// Dead: its flock, taken exclusively on this open file, keeps other
        /// sweeps and `verify` off it until ``remove(_:token:in:)``.
        case dead(fd: Int32)
    }

    /// Whether the writer of `token` is dead, holding its lock exclusively if so.
    static func claim(token: String, in tmp: DirectoryHandle) -> Claim {
        let fd = tmp.openFile(token + suffix, flags: O_RDONLY)
        guard fd >= 0 else { return errno == ENOENT ? .noLockFile : .alive }  // unreadable: never guess dead
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return .alive
        }
        return .dead(fd: fd)
    }

    /// Removes a dead writer's lock file (while still holding its flock), then
    /// lets go of it. False when the file could not be removed.
    static func remove(_ claim: Int32, token: String, in tmp: DirectoryHandle) -> Bool {
        defer { close(claim) }
        return tmp.removeFile(token + suffix)
    }

    /// True when a live writer holds `<token>.writer` in `tmp`.
    static func isHeld(token: String, in tmp: DirectoryHandle) -> Bool {
        let fd = tmp.openFile(token + suffix, flags: O_RDONLY)
        guard fd >= 0 else { return false }  // no lock file: its writer is gone
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return false
        }
        return errno == EWOULDBLOCK
    }
}
