import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The file side of the store, for blobs larger than `[cache] inline_max`:
/// files in `objects/ab/` (256 shard folders, created once at open), written
/// to `tmp/` first, synced, and renamed into place, so no reader ever sees a
/// partial blob. Store v1 used two levels (`objects/ab/cd/`); those are
/// moved by the migration and still recognised by `verify`.
///
/// Blob names carry a random token after the key (`<key>-<token>`): a new
/// version of an item never overwrites the file an older row points to, so
/// the index can switch rows atomically and delete the old file afterwards.
struct BlobStore: Sendable {
    let root: URL
    var objects: URL { root.appendingPathComponent("objects", isDirectory: true) }
    var temporary: URL { root.appendingPathComponent("tmp", isDirectory: true) }

    init(root: URL) { self.root = root }

    static let shards = (0..<256).map { String(format: "%02x", $0) }

    /// The cache folder, `tmp/`, `objects/` and its 256 shard folders (once
    /// created, a blob write never makes a directory).
    func createDirectories() throws(StoreError) {
        for dir in [root, objects, temporary] {
            do {
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            } catch {
                throw StoreError(.io, "cannot create \(dir.path): \(error.localizedDescription)")
            }
        }
        let base = objects.path
        for shard in Self.shards where mkdir(base + "/" + shard, 0o755) != 0 && errno != EEXIST {
            throw StoreError(.io, "cannot create \(base)/\(shard): \(String(cString: strerror(errno)))")
        }
    }

    /// A new relative blob path for `key`.
    func newBlobPath(for key: CacheKey) -> String {
        let hex = key.hex
        let token = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return "objects/\(hex.prefix(2))/\(hex)-\(token)"
    }

    /// Store v1's two-level paths (`objects/ab/cd/<key>-<token>`).
    static func isLegacy(_ relative: String) -> Bool {
        relative.utf8.count > 14 && relative.split(separator: "/").count == 4
    }

    func absolutePath(_ relative: String) -> String { root.path + "/" + relative }

    /// The key a blob path was made for (`objects/ab/<key>-<token>`, or v1's `objects/ab/cd/<key>-<token>`).
    static func key(ofBlob relative: String) -> String? {
        guard let name = relative.split(separator: "/").last, let dash = name.firstIndex(of: "-") else { return nil }
        let key = name[..<dash]
        return key.count == 64 ? String(key) : nil
    }

    /// Writes `data` to a new temp file and flushes it to disk. Returns its path.
    /// Temp names start with the writer's pid so `verify` can tell live writers' files.
    func writeTemporary(_ data: Data) throws(StoreError) -> String {
        let path = temporary.path + "/\(getpid())-\(UUID().uuidString).part"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StoreError(.io, "cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let ok = data.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += n
            }
            return true
        }
        guard ok, fsync(fd) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(path)
            throw StoreError(.io, "cannot write \(path): \(reason)")
        }
        return path
    }

    /// Moves a finished temp file to its blob path. The caller syncs the
    /// shard folder (``syncDirectories(of:)``) before committing a row naming it.
    func commitTemporary(_ tempPath: String, to relative: String) throws(StoreError) {
        let destination = absolutePath(relative)
        if rename(tempPath, destination) != 0 {
            if errno == ENOENT, FileManager.default.fileExists(atPath: tempPath) {
                // A shard folder removed by hand: make it again.
                let dir = (destination as NSString).deletingLastPathComponent
                if mkdir(dir, 0o755) == 0 || errno == EEXIST, rename(tempPath, destination) == 0 { return }
            }
            throw StoreError(.io, "cannot move blob into place at \(destination): \(String(cString: strerror(errno)))")
        }
    }

    /// Hard-links an existing blob under a new name (the migration re-shards
    /// this way: the old name stays valid until the row naming the new one commits).
    func link(_ relative: String, to newRelative: String, replacing: Bool = false) throws(StoreError) {
        if replacing { unlink(absolutePath(newRelative)) }
        guard Glibc.link(absolutePath(relative), absolutePath(newRelative)) == 0 else {
            throw StoreError(.io, "cannot link \(relative) to \(newRelative): \(String(cString: strerror(errno)))")
        }
    }

    /// fsyncs the folders holding `relatives` (each once): after this, the
    /// renames into them survive a power loss.
    func syncDirectories(of relatives: [String]) throws(StoreError) {
        let folders = Set(relatives.map { absolutePath(($0 as NSString).deletingLastPathComponent) })
        for folder in folders {
            let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { throw StoreError(.io, "cannot open \(folder): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            guard fsync(fd) == 0 else { throw StoreError(.io, "cannot sync \(folder): \(String(cString: strerror(errno)))") }
        }
    }

    func discardTemporary(_ tempPath: String) { unlink(tempPath) }

    /// Removes blobs; missing files are fine (another process got there first).
    func remove(_ relatives: [String]) {
        for relative in relatives { unlink(absolutePath(relative)) }
    }

    /// Reads a whole blob; nil when the file is gone (evicted meanwhile).
    func read(_ relative: String) throws(StoreError) -> Data? {
        let path = absolutePath(relative)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw StoreError(.io, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        // Once open, the bytes stay readable even if another process unlinks the file.
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do {
            return try handle.readToEnd() ?? Data()
        } catch {
            throw StoreError(.io, "cannot read \(path): \(error.localizedDescription)")
        }
    }

    /// Size of a blob, nil when missing.
    func size(of relative: String) -> Int64? {
        var info = stat()
        guard stat(absolutePath(relative), &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// Every blob file under `objects/`, as relative paths (shard folders of
    /// store v1's second level included: their names are two characters).
    func allBlobs() -> [String] {
        var result: [String] = []
        let fm = FileManager.default
        guard let level1 = try? fm.contentsOfDirectory(atPath: objects.path) else { return [] }
        for a in level1 {
            guard let level2 = try? fm.contentsOfDirectory(atPath: objects.path + "/" + a) else {
                result.append("objects/\(a)")  // a stray file at the top
                continue
            }
            for b in level2 {
                guard b.utf8.count == 2, let files = try? fm.contentsOfDirectory(atPath: objects.path + "/\(a)/\(b)") else {
                    result.append("objects/\(a)/\(b)")
                    continue
                }
                for file in files { result.append("objects/\(a)/\(b)/\(file)") }
            }
        }
        return result
    }

    /// Temp files, with whether the process that wrote them is still alive.
    func temporaryFiles() -> [(path: String, writerAlive: Bool, age: TimeInterval)] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: temporary.path) else { return [] }
        return names.map { name in
            let path = temporary.path + "/" + name
            var alive = false
            if let pidText = name.split(separator: "-").first, let pid = pid_t(pidText), pid > 0 {
                alive = pid == getpid() ? true : (kill(pid, 0) == 0 || errno == EPERM)
            }
            var info = stat()
            let age = stat(path, &info) == 0 ? Date().timeIntervalSince1970 - Double(info.st_mtim.tv_sec) : 0
            return (path, alive, age)
        }
    }
}

/// A whole-directory advisory lock (flock) held while opening and migrating,
/// so two processes opening a new cache at once do not both create the schema.
final class DirectoryLock {
    private let fd: Int32

    init(path: String) throws(StoreError) {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StoreError(.io, "cannot open lock file \(path): \(String(cString: strerror(errno)))") }
        while flock(fd, LOCK_EX) != 0 {
            if errno != EINTR {
                close(fd)
                throw StoreError(.io, "cannot lock \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
