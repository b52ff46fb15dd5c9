import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One open directory (`O_DIRECTORY | O_NOFOLLOW`), closed in `deinit`.
/// Blob files are listed, opened, renamed and removed relative to it
/// (`openat`, `renameat`, `unlinkat`), never by a path string, so a symlink
/// planted inside the cache (a shard folder pointing elsewhere, a link in
/// place of a blob) is never followed out of it.
final class DirectoryHandle: Sendable {
    let fd: Int32
    let path: String

    enum EntryKind { case file, directory, other }

    /// Opens `path`; with `followingLink` the last component may be a symlink
    /// (the cache folder itself, as the user named it).
    init(path: String, followingLink: Bool = false) throws(StoreError) {
        let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (followingLink ? 0 : O_NOFOLLOW)
        let fd = open(path, flags)
        guard fd >= 0 else { throw StoreError.io("cannot open folder \(path)", errno: errno) }
        self.fd = fd
        self.path = path
    }

    /// The real folder `name` inside this one; nil when missing, a symlink or not a folder.
    init?(in parent: DirectoryHandle, name: String) {
        guard DirectoryHandle.isPlainName(name) else { return nil }
        let fd = openat(parent.fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        self.fd = fd
        path = parent.path + "/" + name
    }

    deinit { close(fd) }

    /// A single path component: not empty, `.`, `..`, and without `/`.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.utf8.contains(0)
    }

    /// Names in the folder with their kind as `lstat` sees it (a symlink is `.other`).
    func entries() -> [(name: String, kind: EntryKind)] {
        let copy = dup(fd)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var result: [(String, EntryKind)] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name != ".", name != ".." else { continue }
            result.append((name, kind(of: name)))
        }
        return result
    }

    func kind(of name: String) -> EntryKind {
        guard let info = status(of: name) else { return .other }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    /// `lstat` of an entry; nil when missing.
    func status(of name: String) -> stat? {
        var info = stat()
        return fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    /// Opens a file in this folder, never through a symlink. -1 and errno on failure.
    func openFile(_ name: String, flags: Int32, mode: mode_t = 0) -> Int32 {
        guard DirectoryHandle.isPlainName(name) else { errno = EINVAL; return -1 }
        let opened = openat(fd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)
        if flags & O_CREAT != 0 { FileMode.settle(opened, mode) }
        return opened
    }

    /// Removes a file (a symlink itself, never its target). False when it was not there.
    @discardableResult
    func removeFile(_ name: String) -> Bool {
        guard DirectoryHandle.isPlainName(name) else { return false }
        return unlinkat(fd, name, 0) == 0
    }

    /// Makes folder `name` with `mode` (exactly, whatever the umask, keeping
    /// the setgid bit a setgid parent passes on); true when it exists as a
    /// folder. The mode is set through the new folder's own descriptor
    /// (``setMode(of:to:kind:)``): a symlink swapped in after `mkdirat` is
    /// never followed.
    func makeDirectory(_ name: String, mode: mode_t) -> Bool {
        if mkdirat(fd, name, mode) == 0 {
            return setMode(of: name, to: mode, kind: .directory) && kind(of: name) == .directory
        }
        return errno == EEXIST && kind(of: name) == .directory
    }

    /// Gives entry `name` the permission bits `mode` through a descriptor of
    /// its own, opened from this folder without following a symlink
    /// (`openat(…, O_NOFOLLOW)` then `fchmod`), and only when it is a `kind`
    /// (`.file` or `.directory`) owned by this process's user: a symlink
    /// planted or swapped in is never followed out of the cache, and another
    /// user's file keeps the mode its owner gave it. A folder keeps its
    /// setgid bit. True when done or not ours to change (missing, a symlink,
    /// another kind, another user's); false, with errno, when a change failed.
    func setMode(of name: String, to mode: mode_t, kind: EntryKind) -> Bool {
        guard DirectoryHandle.isPlainName(name), kind != .other else { errno = EINVAL; return false }
        // O_NONBLOCK and O_NOCTTY: a FIFO or a device under the name is opened
        // without waiting or side effects, and left alone (not `kind`).
        let flags = O_CLOEXEC | O_NOFOLLOW | (kind == .directory ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK | O_NOCTTY)
        var entry = openat(fd, name, flags)
        var pathOnly = false
        if entry < 0, errno == EACCES {
            // Ours but unreadable (a non-root owner with mode 0200): O_PATH
            // opens it without read access; still the entry itself, never a link's target.
            entry = openat(fd, name, DirectoryHandle.pathOnlyFlag | O_NOFOLLOW | O_CLOEXEC)
            pathOnly = true
        }
        guard entry >= 0 else {
            // Gone, a symlink (ELOOP) or not a folder: nothing of ours to change.
            return errno == ENOENT || errno == ELOOP || errno == ENOTDIR
        }
        defer { close(entry) }
        var info = stat()
        guard fstat(entry, &info) == 0 else { return false }
        let type: mode_t = kind == .directory ? S_IFDIR : S_IFREG
        guard info.st_mode & S_IFMT == type, info.st_uid == geteuid() else { return true }
        let wanted = mode | (kind == .directory ? info.st_mode & S_ISGID : 0)
        guard info.st_mode & 0o7777 != wanted else { return true }
        if pathOnly {
            // fchmod refuses an O_PATH descriptor; its /proc link names the
            // opened entry itself (what glibc's fchmodat(AT_SYMLINK_NOFOLLOW) does).
            return fchmodat(AT_FDCWD, "/proc/self/fd/\(entry)", wanted, 0) == 0
        }
        return fchmod(entry, wanted) == 0
    }

    /// Linux's `O_PATH` (`__O_PATH`, 010000000 on every architecture Swift
    /// runs on), which the Glibc module leaves out (it is `_GNU_SOURCE` only).
    static let pathOnlyFlag: Int32 = 0o10000000

    /// fsync of the folder: renames into it survive a power loss.
    func sync() throws(StoreError) {
        guard fsync(fd) == 0 else { throw StoreError.io("cannot sync \(path)", errno: errno) }
    }
}

extension StoreError {
    /// A file-system error: `storage_full` for ENOSPC and EDQUOT, `io` otherwise.
    static func io(_ what: String, errno code: Int32) -> StoreError {
        let reason = String(cString: strerror(code))
        if code == ENOSPC || code == EDQUOT {
            return StoreError(.storageFull, "\(what): \(reason) (the cache's disk is full; purge or free space)")
        }
        return StoreError(.io, "\(what): \(reason)")
    }
}
