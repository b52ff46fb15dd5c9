#if canImport(Glibc)
import Glibc
#endif

/// Files of the cache get the configured mode exactly, whatever the umask
/// of the process that makes them: a shared cache (`mode = "0770"`, the
/// Debian package's) stays group-writable when an operator with umask 022
/// runs `artcache purge`. Folders do the same in ``DirectoryHandle/makeDirectory(_:mode:)``.
enum FileMode {
    /// After an `open` with `O_CREAT | O_NOFOLLOW` (`fd` < 0: nothing to
    /// do): a regular file of this process's user whose permission bits
    /// differ from `mode` gets `mode`, through the descriptor (never a path a
    /// symlink could redirect). Another user's file is left as it is (its
    /// owner's mode holds), and so is anything but a regular file.
    static func settle(_ fd: Int32, _ mode: mode_t) {
        guard fd >= 0 else { return }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(),
              info.st_mode & 0o7777 != mode else { return }
        _ = fchmod(fd, mode)
    }
}
