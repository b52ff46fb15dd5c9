import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A whole-directory advisory lock (flock) held while opening and migrating,
/// so two processes opening a new cache at once do not both create the schema.
final class DirectoryLock {
    private let fd: Int32

    init(path: String, mode: mode_t) throws(StoreError) {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode)
        FileMode.settle(fd, mode)
        guard fd >= 0 else { throw StoreError.io("cannot open lock file \(path)", errno: errno) }
        while flock(fd, LOCK_EX) != 0 {
            if errno != EINTR {
                let code = errno
                close(fd)
                throw StoreError.io("cannot lock \(path)", errno: code)
            }
        }
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
