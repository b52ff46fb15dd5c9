import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What `verify` finds on disk: blob files, temp files, and entries that are
/// neither (never deleted, only reported).
struct BlobScan {
    /// Blob files (`objects/ab/<key>-<token>`, v1's `objects/ab/cd/...`).
    var blobs: [String] = []
    /// Anything else under `objects/` or `tmp/`: foreign names, symlinks,
    /// special files. Left alone.
    var ignored: [String] = []
}

extension BlobStore {
    /// Every blob file under `objects/`, as relative paths, listed without
    /// following symlinks; what is not a blob by name and type is `ignored`.
    func scanBlobs() -> BlobScan {
        var scan = BlobScan()
        guard let objects = try? DirectoryHandle(path: objects.path) else { return scan }  // no objects/: nothing to list
        for (shard, kind) in objects.entries() {
            guard kind == .directory, Self.isShardName(Substring(shard)), let folder = DirectoryHandle(in: objects, name: shard) else {
                scan.ignored.append("objects/\(shard)")
                continue
            }
            for (name, kind) in folder.entries() {
                if kind == .file, Self.isBlobName(Substring(name)) {
                    scan.blobs.append("objects/\(shard)/\(name)")
                } else if kind == .directory, Self.isShardName(Substring(name)), let legacy = DirectoryHandle(in: folder, name: name) {
                    for (file, kind) in legacy.entries() {
                        let path = "objects/\(shard)/\(name)/\(file)"
                        if kind == .file, Self.isBlobName(Substring(file)) { scan.blobs.append(path) } else { scan.ignored.append(path) }
                    }
                } else {
                    scan.ignored.append("objects/\(shard)/\(name)")
                }
            }
        }
        return scan
    }

    /// The blob files (see ``scanBlobs()``).
    func allBlobs() -> [String] { scanBlobs().blobs }

    /// Temp files (`<token>-<id>.part`) and writer locks (`<token>.writer`)
    /// in `tmp/`, each with whether its writer is alive: whether some
    /// process, in any pid namespace, holds the flock of `<token>.writer`.
    /// Nothing here depends on pids.
    func temporaryFiles() -> [(path: String, writerAlive: Bool, age: TimeInterval)] {
        guard let tmp = try? DirectoryHandle(path: temporary.path) else { return [] }  // no tmp/: no temp files
        var alive: [String: Bool] = [:]
        func isAlive(_ token: String) -> Bool {
            if let known = alive[token] { return known }
            let held = token == writer.token || WriterLock.isHeld(token: token, in: tmp)
            alive[token] = held
            return held
        }
        var result: [(String, Bool, TimeInterval)] = []
        for (name, kind) in tmp.entries() where kind == .file {
            let token: String
            if name.hasSuffix(".part"), let dash = name.firstIndex(of: "-") {
                token = String(name[..<dash])
            } else if name.hasSuffix(WriterLock.suffix) {
                token = String(name.dropLast(WriterLock.suffix.count))
            } else {
                continue  // not ours (and never deleted)
            }
            let age = tmp.status(of: name).map { Date().timeIntervalSince1970 - Double($0.st_mtim.tv_sec) } ?? 0
            result.append((temporary.path + "/" + name, isAlive(token), age))
        }
        return result
    }

    /// Deletes v1's second-level folders (`objects/ab/cd/`) and the blob
    /// files left in them, without following symlinks (a link in their place
    /// is left alone).
    func removeLegacyFolders() {
        guard let objects = try? DirectoryHandle(path: objects.path) else { return }  // no objects/: nothing to remove
        for shard in Self.shards {
            guard let folder = DirectoryHandle(in: objects, name: shard) else { continue }
            for (name, kind) in folder.entries() where kind == .directory && Self.isShardName(Substring(name)) {
                guard let legacy = DirectoryHandle(in: folder, name: name) else { continue }
                for (file, kind) in legacy.entries() where kind == .file && Self.isBlobName(Substring(file)) {
                    legacy.removeFile(file)
                }
                unlinkat(folder.fd, name, AT_REMOVEDIR)  // only when empty
            }
        }
    }
}

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
    /// a process that exits without it leaves a released lock that `verify --repair` removes).
    func release() {
        fd.withLock { fd in
            guard let open = fd else { return }
            unlink(path)
            close(open)  // releases the flock
            fd = nil
        }
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

/// A whole-directory advisory lock (flock) held while opening and migrating,
/// so two processes opening a new cache at once do not both create the schema.
final class DirectoryLock {
    private let fd: Int32

    init(path: String, mode: mode_t) throws(StoreError) {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode)
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
