import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension BlobStore {
    /// Removes what dead writers left: the lock file of a process killed with
    /// its store open, the temp files named with its token, and the blob
    /// files its last batch renamed into `objects/` but never committed (its
    /// ``RenameJournal`` lists them; `isNamed` says whether a row names a
    /// path: those stay). Run when a cache opens, so that after a crash
    /// `verify` is clean again without a `--repair` (no row or blob was
    /// damaged; these only pile up).
    ///
    /// "Dead" is exactly what `verify` means by it (``temporaryFiles()``):
    /// nobody holds the flock of `<token>.writer`, or there is no such file
    /// (a writer takes its lock before its first temp file and lets go of it
    /// only after its last). A live writer holds its flock, in this process
    /// or any other, in any pid namespace: its files are never touched. The
    /// dead writer's flock is held exclusively while its files go, so a
    /// concurrent sweep or `verify` sees it as taken and leaves it be.
    /// Best effort: a file that cannot be removed is left for `verify`.
    /// Returns how many files went.
    func sweepDeadWriters(isNamed: (String) -> Bool) -> Int {
        guard let tmp = try? DirectoryHandle(path: temporary.path) else { return 0 }  // no tmp/: nothing to sweep
        var parts: [String: [String]] = [:]
        var locks: Set<String> = []
        for (name, kind) in tmp.entries() where kind == .file {
            guard let token = Self.writerToken(ofTemporary: name), token != writer.token else { continue }
            if name.hasSuffix(WriterLock.suffix) { locks.insert(token) } else { parts[token, default: []].append(name) }
        }
        var removed = 0
        for token in locks.union(parts.keys) {
            let claim = WriterLock.claim(token: token, in: tmp)
            if case .alive = claim { continue }
            let orphans = RenameJournal.paths(token: token, in: tmp).filter { Self.parse($0) != nil && !isNamed($0) }
            if !orphans.isEmpty {
                // Deleting blob files: ordered with `verify` like every deleter.
                _ = try? cleanup.shared { remove(orphans) }
                removed += orphans.count
            }
            for name in parts[token] ?? [] where tmp.removeFile(name) { removed += 1 }
            if case .dead(let fd) = claim, WriterLock.remove(fd, token: token, in: tmp) { removed += 1 }
        }
        return removed
    }
}
