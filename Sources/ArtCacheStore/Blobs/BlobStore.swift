import ArtCacheCore
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
///
/// Every file operation goes through ``DirectoryHandle`` (no symlink is
/// followed inside the cache), and only names of the blob pattern are ever
/// opened or deleted as blobs: a path from a damaged row or a file someone
/// put in `objects/` is refused or left alone, never followed.
struct BlobStore: Sendable {
    let root: URL
    /// Permission bits of the cache's folders (`[cache] mode`); files get the
    /// same bits without execute.
    let directoryMode: mode_t
    /// This process's writer lock: temp files named with its token are live
    /// while it is held (``temporaryFiles()``).
    let writer: WriterLock
    /// The blob paths this writer's batch in progress renames into place
    /// (what a sweep removes if the writer dies before its commit).
    let renames: RenameJournal
    /// `objects/`, open while the store is: what ``syncFilesystem()`` syncs.
    let anchor: DirectoryHandle

    var objects: URL { root.appendingPathComponent("objects", isDirectory: true) }
    var temporary: URL { root.appendingPathComponent("tmp", isDirectory: true) }
    var fileMode: mode_t { directoryMode & 0o666 }
    /// Held shared by whoever deletes blobs after a commit, exclusively by `verify`.
    var cleanup: CleanupLock { CleanupLock(path: root.path + "/cleanup.lock", mode: fileMode) }

    /// Creates the folders (``createDirectories(root:mode:)``) and takes a writer lock.
    init(root: URL, mode: mode_t) throws(StoreError) {
        self.root = root
        directoryMode = mode
        try Self.createDirectories(root: root, mode: mode)
        writer = try WriterLock(in: root.appendingPathComponent("tmp").path, mode: mode & 0o666)
        renames = RenameJournal(folder: root.appendingPathComponent("tmp").path, token: writer.token, mode: mode & 0o666)
        anchor = try DirectoryHandle(path: root.appendingPathComponent("objects").path)
    }

    static let shards = (0..<256).map { String(format: "%02x", $0) }

    /// The cache folder, `tmp/`, `objects/` and its 256 shard folders (once
    /// created, a blob write never makes a directory), all with `mode`. A
    /// cache made with other permissions (an older artcache, another mode)
    /// gets `mode` on its folders and index files.
    ///
    /// Every mode change goes through a descriptor opened from the cache's
    /// own folder handle without following symlinks, and only for what this
    /// process's user owns (``DirectoryHandle/setMode(of:to:kind:)``): a
    /// symlink planted in the cache never redirects a change (root would
    /// otherwise change a file outside it), and a folder that is not ours
    /// (another user's cache, a folder a foreign config names) keeps its mode.
    static func createDirectories(root: URL, mode: mode_t) throws(StoreError) {
        try makeFolders(root.path, mode: mode)
        let top = try DirectoryHandle(path: root.path, followingLink: true)
        var info = stat()
        guard fstat(top.fd, &info) == 0 else { throw StoreError.io("cannot read \(root.path)", errno: errno) }
        let existing = info.st_mode & 0o777
        if existing != mode {
            if info.st_uid == geteuid() {
                guard fchmod(top.fd, mode | (info.st_mode & S_ISGID)) == 0 else { throw StoreError.io("cannot set mode of \(root.path)", errno: errno) }
            }
            for name in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm", "lock"] {
                guard top.setMode(of: name, to: mode & 0o666, kind: .file) else {
                    throw StoreError.io("cannot set mode of \(root.path)/\(name)", errno: errno)
                }
            }
        }
        for name in ["objects", "tmp"] where !top.makeDirectory(name, mode: mode) {
            throw StoreError.io("cannot create \(root.path)/\(name)", errno: errno)
        }
        guard let objects = DirectoryHandle(in: top, name: "objects") else {
            throw StoreError(.io, "\(root.path)/objects is not a folder (a symlink?)")
        }
        if existing != mode { _ = top.setMode(of: "tmp", to: mode, kind: .directory); _ = top.setMode(of: "objects", to: mode, kind: .directory) }
        for shard in shards {
            guard objects.makeDirectory(shard, mode: mode) else {
                throw StoreError.io("cannot create \(objects.path)/\(shard)", errno: errno)
            }
            if existing != mode { _ = objects.setMode(of: shard, to: mode, kind: .directory) }
        }
    }

    /// `mkdir -p`: makes the missing folders of `path` with `mode` (less
    /// the umask; the cache folder then gets `mode` exactly through its
    /// descriptor). A folder that exists is left as it is: nothing is
    /// changed by path.
    static func makeFolders(_ path: String, mode: mode_t) throws(StoreError) {
        var current = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") where part != "." {
            current += "/" + part
            if mkdir(current, mode) != 0, errno != EEXIST {
                throw StoreError.io("cannot create \(current)", errno: errno)
            }
        }
    }

    /// A new relative blob path for `key`.
    func newBlobPath(for key: CacheKey) -> String {
        let hex = key.hex
        let token = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return "objects/\(hex.prefix(2))/\(hex)-\(token)"
    }

    /// Store v1's two-level blob paths (`objects/ab/cd/<key>-<token>`), exactly:
    /// the migration moves those and only those.
    static func isLegacy(_ relative: String) -> Bool {
        parse(relative)?.folders.count == 2
    }

    func absolutePath(_ relative: String) -> String { root.path + "/" + relative }

    /// The key a blob path was made for (`objects/ab/<key>-<token>`, or v1's `objects/ab/cd/<key>-<token>`).
    static func key(ofBlob relative: String) -> String? {
        guard let name = relative.split(separator: "/").last, let dash = name.firstIndex(of: "-") else { return nil }
        let key = name[..<dash]
        return key.count == 64 ? String(key) : nil
    }

    /// A blob file name: 64 hex digits of key, `-`, 1 to 16 hex digits of token.
    static func isBlobName(_ name: Substring) -> Bool {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        return parts.count == 2 && parts[0].utf8.count == 64 && isLowerHex(parts[0])
            && (1...16).contains(parts[1].utf8.count) && isLowerHex(parts[1])
    }

    static func isShardName(_ name: Substring) -> Bool { name.utf8.count == 2 && isLowerHex(name) }

    private static func isLowerHex(_ text: Substring) -> Bool {
        text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// `objects/ab/<blob>` or v1's `objects/ab/cd/<blob>`, split into its
    /// folders (below `objects/`) and file name; nil for anything else.
    static func parse(_ relative: String) -> (folders: [String], name: String)? {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 4, parts[0] == "objects", let name = parts.last, isBlobName(name),
              parts.dropFirst().dropLast().allSatisfy(isShardName) else { return nil }
        return (parts.dropFirst().dropLast().map(String.init), String(name))
    }

    /// The folder holding a blob, opened without following symlinks; nil
    /// when the path is not a blob path or a folder on the way is missing or a symlink.
    func folder(of relative: String) -> (DirectoryHandle, String)? {
        guard let (folders, name) = Self.parse(relative), let folder = openFolders(folders) else { return nil }
        return (folder, name)
    }

    /// `objects/` and then each of `folders` (shard names) below it, without
    /// following symlinks; nil when one is missing or not a real folder.
    func openFolders(_ folders: [String]) -> DirectoryHandle? {
        guard folders.allSatisfy({ Self.isShardName(Substring($0)) }),
              var current = try? DirectoryHandle(path: objects.path) else { return nil }  // no objects/: no blob
        for folder in folders {
            guard let next = DirectoryHandle(in: current, name: folder) else { return nil }
            current = next
        }
        return current
    }

    /// Writes `data` to a new temp file (named with this process's writer
    /// token). Returns its path. Not yet on disk: the group commit syncs a
    /// batch's files together before the rows naming them commit
    /// (``syncTemporary(_:)`` or ``syncFilesystem()``, `[cache] sync`).
    func writeTemporary(_ data: Data) throws(StoreError) -> String {
        let name = "\(writer.token)-\(UUID().uuidString).part"
        let path = temporary.path + "/" + name
        let tmp = try DirectoryHandle(path: temporary.path)
        let fd = tmp.openFile(name, flags: O_WRONLY | O_CREAT | O_EXCL, mode: fileMode)
        guard fd >= 0 else { throw StoreError.io("cannot create \(path)", errno: errno) }
        defer { close(fd) }
        let failure: Int32? = data.withUnsafeBytes { buffer -> Int32? in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += n
            }
            if fchmod(fd, fileMode) != 0 { return errno }
            return nil
        }
        if let failure {
            tmp.removeFile(name)
            throw StoreError.io("cannot write \(path)", errno: failure)
        }
        return path
    }

    /// Flushes a temp file's bytes to disk (`[cache] sync = "files"`).
    func syncTemporary(_ tempPath: String) throws(StoreError) {
        let tmp = try DirectoryHandle(path: temporary.path)
        let fd = tmp.openFile((tempPath as NSString).lastPathComponent, flags: O_RDONLY)
        guard fd >= 0 else { throw StoreError.io("cannot open \(tempPath)", errno: errno) }
        defer { close(fd) }
        guard fdatasync(fd) == 0 else { throw StoreError.io("cannot sync \(tempPath)", errno: errno) }
    }

    /// Flushes everything written to the cache's filesystem, the batch's
    /// files and their renames, in one call (`[cache] sync = "filesystem"`,
    /// syncfs(2)). The handle it syncs through was opened with the store, so
    /// a write-back error since then (a file of this batch that failed to
    /// reach the disk in the background) is reported here.
    func syncFilesystem() throws(StoreError) {
        guard let syncfs = Self.syncfs else { throw StoreError(.io, "syncfs(2) is not available: use [cache] sync = \"files\"") }
        guard syncfs(anchor.fd) == 0 else { throw StoreError.io("cannot sync the filesystem of \(root.path)", errno: errno) }
    }

    /// syncfs(2), looked up once (Swift's Glibc module does not declare it).
    private static let syncfs: (@convention(c) (Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "syncfs") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
    }()

    /// Moves a finished temp file to its blob path. The caller syncs the
    /// shard folder (``syncDirectories(of:)``) before committing a row naming it.
    func commitTemporary(_ tempPath: String, to relative: String) throws(StoreError) {
        let tempName = (tempPath as NSString).lastPathComponent
        let tmp = try DirectoryHandle(path: temporary.path)
        var target = folder(of: relative)
        if target == nil, let (folders, _) = Self.parse(relative), folders.count == 1 {
            // A shard folder removed by hand: make it again.
            let objects = try DirectoryHandle(path: objects.path)
            if objects.makeDirectory(folders[0], mode: directoryMode) { target = folder(of: relative) }
        }
        guard let (shard, name) = target else {
            throw StoreError(.io, "cannot move blob into place at \(absolutePath(relative)): not a blob folder")
        }
        guard renameat(tmp.fd, tempName, shard.fd, name) == 0 else {
            throw StoreError.io("cannot move blob into place at \(absolutePath(relative))", errno: errno)
        }
    }

    /// Hard-links an existing blob under a new name (the migration re-shards
    /// this way: the old name stays valid until the row naming the new one commits).
    func link(_ relative: String, to newRelative: String, replacing: Bool = false) throws(StoreError) {
        guard let (from, fromName) = folder(of: relative), let (to, toName) = folder(of: newRelative) else {
            throw StoreError(.io, "cannot link \(relative) to \(newRelative): not blob paths")
        }
        if replacing { to.removeFile(toName) }
        guard linkat(from.fd, fromName, to.fd, toName, 0) == 0 else {
            throw StoreError.io("cannot link \(relative) to \(newRelative)", errno: errno)
        }
    }

    /// fsyncs the folders holding `relatives` (each once): after this, the
    /// renames into them survive a power loss.
    func syncDirectories(of relatives: [String]) throws(StoreError) {
        let folders = Set(relatives.compactMap { Self.parse($0)?.folders })
        for folders in folders {
            guard let handle = openFolders(folders) else {
                throw StoreError(.io, "cannot open \(objects.path)/\(folders.joined(separator: "/")): not a blob folder")
            }
            try handle.sync()
        }
    }

    func discardTemporary(_ tempPath: String) {
        guard let tmp = try? DirectoryHandle(path: temporary.path) else { return }  // nothing to remove without tmp/
        tmp.removeFile((tempPath as NSString).lastPathComponent)
    }

    /// Removes blobs; missing files are fine (another process got there
    /// first). Paths that are not blob paths are never touched.
    func remove(_ relatives: [String]) {
        for relative in relatives {
            guard let (folder, name) = folder(of: relative) else { continue }
            folder.removeFile(name)
        }
    }

    /// Reads a whole blob; nil when the file is gone (evicted meanwhile).
    /// Opened without following symlinks; a path that is not a blob path is
    /// an error.
    func read(_ relative: String) throws(StoreError) -> Data? {
        guard Self.parse(relative) != nil else { throw StoreError(.io, "\(relative) is not a blob path") }
        guard let (folder, name) = folder(of: relative) else { return nil }
        let fd = folder.openFile(name, flags: O_RDONLY)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw StoreError.io("cannot open \(absolutePath(relative))", errno: errno)
        }
        // Once open, the bytes stay readable even if another process unlinks the file.
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do {
            return try handle.readToEnd() ?? Data()
        } catch {
            throw StoreError(.io, "cannot read \(absolutePath(relative)): \(FileErrorText.reason(error))")
        }
    }

    /// Size of a blob file, nil when missing (or not a regular file).
    func size(of relative: String) -> Int64? {
        guard let (folder, name) = folder(of: relative), let info = folder.status(of: name),
              info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(info.st_size)
    }
}
