@testable import ArtCacheCore
@testable import ArtCacheStore
import Foundation
import Testing

/// Issue 34: a mode change inside the cache goes through a descriptor
/// opened without following symlinks, so a symlink planted in the cache
/// (or swapped in between a check and the change) never makes root change
/// the mode of something outside it.
extension FileSafetyTests {
    /// A folder and a file outside the cache, with modes of their own, and
    /// links to them inside `folder`.
    static func outsideTargets(_ dir: TempDir) -> (folder: String, file: String) {
        let folder = dir.file("outside-folder")
        let file = dir.write("outside-file", "not the cache's")
        #expect(mkdir(folder, 0o700) == 0 && chmod(folder, 0o751) == 0 && chmod(file, 0o604) == 0)
        return (folder, file)
    }

    /// ``DirectoryHandle/setMode(of:to:kind:)`` changes real entries of
    /// ours and leaves a symlink's target alone (`fchmodat(fd, name, mode, 0)`,
    /// what it replaces, follows the link).
    @Test func setModeNeverFollowsASymlink() throws {
        let dir = TempDir()
        let (folder, file) = Self.outsideTargets(dir)
        let cache = dir.file("cache")
        #expect(mkdir(cache, 0o700) == 0)
        #expect(symlink(folder, cache + "/linked-folder") == 0 && symlink(file, cache + "/linked-file") == 0)
        #expect(mkdir(cache + "/real", 0o700) == 0)
        FileManager.default.createFile(atPath: cache + "/real-file", contents: Data("x".utf8))
        let handle = try DirectoryHandle(path: cache)
        #expect(handle.setMode(of: "linked-folder", to: 0o700, kind: .directory))
        #expect(handle.setMode(of: "linked-folder", to: 0o700, kind: .file))
        #expect(handle.setMode(of: "linked-file", to: 0o600, kind: .file))
        #expect(Self.mode(folder) == 0o751 && Self.mode(file) == 0o604)
        // Real entries of ours do change; a file is not changed as a folder.
        #expect(handle.setMode(of: "real", to: 0o750, kind: .directory) && Self.mode(cache + "/real") == 0o750)
        #expect(handle.setMode(of: "real-file", to: 0o640, kind: .file) && Self.mode(cache + "/real-file") == 0o640)
        #expect(handle.setMode(of: "real-file", to: 0o600, kind: .directory) && Self.mode(cache + "/real-file") == 0o640)
        #expect(handle.setMode(of: "missing", to: 0o600, kind: .file))
        #expect(!handle.setMode(of: "../outside-file", to: 0o600, kind: .file) && Self.mode(file) == 0o604)
    }

    /// A shard folder, `tmp/` and the index's WAL replaced by symlinks to
    /// things outside the cache, then the cache opened with another mode
    /// (what makes `createDirectories` change modes): the targets keep theirs.
    @Test func aPlantedSymlinkIsNeverFollowedByAModeChange() async throws {
        let dir = TempDir()
        let (folder, file) = Self.outsideTargets(dir)
        let cache = dir.file("cache")
        let first = try await CacheStore.open(settings: Fixtures.settings(cache, inlineMax: 0))
        try await first.close()
        try FileManager.default.removeItem(atPath: cache + "/objects/7f")
        #expect(symlink(folder, cache + "/objects/7f") == 0)
        try? FileManager.default.removeItem(atPath: cache + "/index.sqlite-wal")
        #expect(symlink(file, cache + "/index.sqlite-wal") == 0)
        #expect(throws: StoreError.self) { try BlobStore.createDirectories(root: URL(fileURLWithPath: cache), mode: 0o750) }
        #expect(Self.mode(folder) == 0o751 && Self.mode(file) == 0o604)
        #expect(Self.mode(cache) == 0o750 && Self.mode(cache + "/objects/00") == 0o750, "the cache's own folders changed")
        // tmp/ as a link: refused as well, the target untouched.
        try FileManager.default.removeItem(atPath: cache + "/objects/7f")
        try FileManager.default.removeItem(atPath: cache + "/tmp")
        #expect(symlink(folder, cache + "/tmp") == 0)
        #expect(throws: StoreError.self) { try BlobStore.createDirectories(root: URL(fileURLWithPath: cache), mode: 0o700) }
        #expect(Self.mode(folder) == 0o751 && Self.mode(file) == 0o604)
    }

    /// The race the issue won as root: a shard folder swapped with a
    /// symlink to an outside folder while the cache's folders get a new
    /// mode, again and again. The outside folder keeps its mode.
    @Test func aSymlinkSwappedInDuringAModeChangeIsNeverFollowed() throws {
        let dir = TempDir()
        let (folder, _) = Self.outsideTargets(dir)
        let cache = dir.file("cache")
        let root = URL(fileURLWithPath: cache)
        try BlobStore.createDirectories(root: root, mode: 0o700)
        let shard = cache + "/objects/7f", aside = cache + "/objects/7f-aside"
        let stop = Locked(false)
        let swaps = Locked(0)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while !stop.withLock({ $0 }) {
                // Errors are expected (the opener made the folder again, or holds it): the race goes on.
                _ = rename(shard, aside)
                if symlink(folder, shard) == 0 { swaps.withLock { $0 += 1 } }
                _ = unlink(shard)
                _ = rename(aside, shard)
            }
            done.signal()
        }
        for round in 0..<300 {
            _ = try? BlobStore.createDirectories(root: root, mode: round % 2 == 0 ? 0o750 : 0o700)
        }
        stop.withLock { $0 = true }
        done.wait()
        #expect(swaps.withLock { $0 } > 0, "the symlink was in place at times")
        #expect(Self.mode(folder) == 0o751)
    }
}
