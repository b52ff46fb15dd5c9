import ArtCacheCore
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
    ///
    /// A writer that closes while this runs takes its files with it (each is
    /// renamed or removed before its lock is released), so a file listed
    /// while its writer was alive may be gone by the time the lock is found
    /// released: each file is looked at again after its writer's verdict and
    /// only reported if it is still there. `afterListing` runs between the
    /// listing and the verdicts (tests use it to close a writer there).
    func temporaryFiles(afterListing: () -> Void = {}) -> [(path: String, writerAlive: Bool, age: TimeInterval)] {
        guard let tmp = try? DirectoryHandle(path: temporary.path) else { return [] }  // no tmp/: no temp files
        var alive: [String: Bool] = [:]
        func isAlive(_ token: String) -> Bool {
            if let known = alive[token] { return known }
            let held = token == writer.token || WriterLock.isHeld(token: token, in: tmp)
            alive[token] = held
            return held
        }
        let listed = tmp.entries().compactMap { name, kind in
            kind == .file ? Self.writerToken(ofTemporary: name).map { (name, $0) } : nil  // else not ours (and never deleted)
        }
        afterListing()
        var result: [(String, Bool, TimeInterval)] = []
        for (name, token) in listed {
            let live = isAlive(token)
            // Looked at after the verdict: gone means its writer finished with it.
            guard let status = tmp.status(of: name) else { continue }
            let age = Date().timeIntervalSince1970 - Double(status.st_mtim.tv_sec)
            result.append((temporary.path + "/" + name, live, age))
        }
        return result
    }

    /// The writer token a file in `tmp/` belongs to: `<token>-<id>.part` (a
    /// temp file) or `<token>.writer` (its lock); nil for anything else.
    static func writerToken(ofTemporary name: String) -> String? {
        if name.hasSuffix(".part"), let dash = name.firstIndex(of: "-") { return String(name[..<dash]) }
        if name.hasSuffix(WriterLock.suffix) { return String(name.dropLast(WriterLock.suffix.count)) }
        if name.hasSuffix(RenameJournal.suffix) { return String(name.dropLast(RenameJournal.suffix.count)) }
        return nil
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
