@_spi(Benchmarks) import ArtCacheCore
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
    /// the setgid bit a setgid parent passes on); true when it exists as a folder.
    func makeDirectory(_ name: String, mode: mode_t) -> Bool {
        if mkdirat(fd, name, mode) == 0 {
            var info = stat()
            let inherited = fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info.st_mode & S_ISGID : 0
            return fchmodat(fd, name, mode | inherited, 0) == 0
        }
        return errno == EEXIST && kind(of: name) == .directory
    }

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
