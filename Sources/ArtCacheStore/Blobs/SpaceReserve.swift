import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Free space kept back for the index: `<cache>/reserve`, a file of
/// ``size`` bytes made when the disk has room. When the disk fills up,
/// SQLite needs room to delete (its WAL grows before anything shrinks):
/// purging, evicting and opening the cache free the reserve and try again,
/// so a full cache can always be emptied. Remade at the next open with room.
enum SpaceReserve {
    static let size = 1 << 20
    static let name = "reserve"

    /// Makes the reserve when missing and the disk has room for it twice
    /// over. Best effort: without room the cache works without one.
    static func ensure(in root: DirectoryHandle, mode: mode_t) {
        guard root.kind(of: name) != .file, freeBytes(root.fd) > Int64(size) * 2 else { return }
        let fd = root.openFile(name + ".new", flags: O_WRONLY | O_CREAT | O_TRUNC, mode: mode)
        guard fd >= 0 else { return }  // best effort (see above)
        let zeros = [UInt8](repeating: 0, count: 64 * 1024)
        var written = 0
        while written < size {
            let n = zeros.withUnsafeBytes { write(fd, $0.baseAddress, min($0.count, size - written)) }
            guard n > 0 else { break }
            written += n
        }
        let complete = written == size && fsync(fd) == 0
        close(fd)
        if complete {
            renameat(root.fd, name + ".new", root.fd, name)
        } else {
            root.removeFile(name + ".new")
        }
    }

    /// Deletes the reserve; true when there was one to free.
    static func release(in root: DirectoryHandle) -> Bool {
        root.removeFile(name + ".new")
        return root.removeFile(name)
    }

    /// Bytes available to this user on the file system holding `fd`.
    static func freeBytes(_ fd: Int32) -> Int64 {
        var info = statvfs()
        guard fstatvfs(fd, &info) == 0 else { return 0 }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// True when the file system holding `fd` has (almost) no room left.
    static func diskIsFull(_ fd: Int32) -> Bool { freeBytes(fd) < 256 * 1024 }
}

extension BlobStore {
    /// Makes the reserve (at open, and after a purge) when there is room.
    func ensureReserve() {
        guard let root = try? DirectoryHandle(path: root.path, followingLink: true) else { return }  // best effort
        SpaceReserve.ensure(in: root, mode: fileMode)
    }

    /// Frees the reserve when the disk is full; true when that freed room.
    func releaseReserveIfFull() -> Bool {
        guard let root = try? DirectoryHandle(path: root.path, followingLink: true), SpaceReserve.diskIsFull(root.fd) else {
            return false
        }
        return SpaceReserve.release(in: root)
    }
}
