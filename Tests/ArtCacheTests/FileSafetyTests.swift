@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// Review findings on the file system: documented permissions, blobs never
/// opened through symlinks, temp files live by their writer's lock (not a
/// pid), and a full disk as a typed error.
@Suite("File safety", .timeLimit(.minutes(3)))
struct FileSafetyTests {
    static func mode(_ path: String) -> Int {
        var info = stat()
        return lstat(path, &info) == 0 ? Int(info.st_mode & 0o777) : -1
    }

    @Test func defaultPermissionsAreOwnerOnly() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        let store = try await CacheStore.open(settings: Fixtures.settings(cache, inlineMax: 0))
        let stored = try await store.put(url: "https://h.test/a.png", data: Fixtures.pngLike(size: 2000))
        for folder in ["", "/objects", "/objects/00", "/objects/ff", "/tmp"] {
            #expect(Self.mode(cache + folder) == 0o700, "\(folder)")
        }
        for file in ["/index.sqlite", "/index.sqlite-wal", "/lock", "/" + stored.entry.blob!] {
            #expect(Self.mode(cache + file) == 0o600, "\(file)")
        }
        try await store.close()
    }

    /// `[cache] mode` applies to a new cache and, at the next open, to an existing one.
    @Test func configuredModeAppliesToNewAndExistingCaches() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        var settings = Fixtures.settings(cache, inlineMax: 0)
        let first = try await CacheStore.open(settings: settings)
        try await first.close()
        settings.mode = 0o750
        let store = try await CacheStore.open(settings: settings)
        let stored = try await store.put(url: "https://h.test/b.png", data: Fixtures.pngLike(size: 2000))
        #expect(Self.mode(cache) == 0o750)
        #expect(Self.mode(cache + "/objects/7f") == 0o750)
        #expect(Self.mode(cache + "/index.sqlite") == 0o640)
        #expect(Self.mode(cache + "/" + stored.entry.blob!) == 0o640)
        try await store.close()
        let error = #expect(throws: ConfigError.self) { try Configuration.read(path: nil, environment: ["ARTCACHE_CACHE_MODE": "0077"]) }
        #expect(error?.key == "cache.mode")
        #expect(try Configuration.read(path: nil, environment: ["ARTCACHE_CACHE_MODE": "770"]).cache.mode == 0o770)
    }

    /// A shared cache (`mode = "0770"`, the Debian package's, in a setgid
    /// folder of group artcache) stays shared whatever the umask of the
    /// process that writes it: a CLI child with umask 027 makes files 0660
    /// and folders 0770 that keep the setgid bit, so files made by root or
    /// an operator stay in the folder's group.
    @Test func aSharedCacheIgnoresTheWritersUmask() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        #expect(mkdir(cache, 0o700) == 0 && chmod(cache, 0o2770) == 0)
        // A command that writes (`stats` creates no cache) makes the cache in the folder.
        let result = try await CLI.run(["-c", "umask 027; exec \"$0\" \"$@\"", CLI.binary, "verify", "--repair", "--cache-dir", cache],
                                       environment: ["ARTCACHE_CACHE_MODE": "0770"], executable: "/bin/sh")
        #expect(result.status == 0, "\(result.stderr)")
        var settings = Fixtures.settings(cache, inlineMax: 0)
        settings.mode = 0o770
        // This process's own umask (022 under CI) would take the blob's group write.
        let store = try await CacheStore.open(settings: settings)
        let stored = try await store.put(url: "https://h.test/shared.png", data: Fixtures.pngLike(size: 2000))
        for file in ["/index.sqlite", "/lock", "/" + stored.entry.blob!] {
            #expect(Self.mode(cache + file) == 0o660, "\(file)")
        }
        for folder in ["/objects", "/objects/00", "/tmp"] {
            var info = stat()
            #expect(lstat(cache + folder, &info) == 0 && info.st_mode & 0o7777 == 0o2770, "\(folder)")
        }
        try await store.close()
    }

    /// A blob file replaced by a symlink is not followed: the row reads as
    /// missing, and verify reports it without touching the target.
    @Test func blobsAreNeverOpenedThroughSymlinks() async throws {
        let dir = TempDir()
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.file("cache"), inlineMax: 0))
        let stored = try await store.put(url: "https://h.test/c.png", data: Fixtures.pngLike(size: 3000))
        let path = store.filePath(of: stored.entry)
        let secret = dir.write("secret", "not an image")
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: secret)
        #expect(throws: StoreError.self) { _ = try store.blobs.read(stored.entry.blob!) }
        #expect(store.blobs.size(of: stored.entry.blob!) == nil)
        let report = try await store.verify(repair: true, hash: true)
        #expect(report.missingBlobs == 1)
        #expect(FileManager.default.contents(atPath: secret) == Data("not an image".utf8))
        // A path from a damaged row that is not a blob path is refused, not opened.
        #expect(throws: StoreError.self) { _ = try store.blobs.read("objects/../../secret") }
        try await store.close()
    }

    /// A temp file is live while its writer holds its lock, whatever its pid
    /// says (pids are per namespace); released, it is a dead writer's leftover.
    @Test func tempFilesAreLiveByTheirWritersLock() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        let verifier = try await CacheStore.open(settings: Fixtures.settings(cache))
        let writer = try await CacheStore.open(settings: Fixtures.settings(cache))
        let live = try writer.blobs.writeTemporary(Data("in flight".utf8))
        // The old rule took a file named with a live pid (here our own) for live.
        _ = FileManager.default.createFile(atPath: cache + "/tmp/\(getpid())-\(UUID().uuidString).part", contents: Data("x".utf8))
        let report = try await verifier.verify()
        #expect(report.tempFiles == 1, "only the pid-named file is dead: \(report.problems)")
        #expect(FileManager.default.fileExists(atPath: live))
        try await writer.close()  // releases the lock; its temp file is now a leftover
        let after = try await verifier.verify(repair: true)
        #expect(after.tempFiles == 2)
        #expect(!FileManager.default.fileExists(atPath: live))
        #expect(try await verifier.verify().remaining == 0)
        try await verifier.close()
    }

    /// A writer that finishes with its temp file and closes between verify's
    /// listing and its look at the writer's lock left nothing behind: its
    /// file is not reported (the reliability soak's concurrent verify saw it
    /// once as a dead writer's temp file).
    @Test func aWriterClosingDuringTheListingLeavesNoTempFile() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        let verifier = try await CacheStore.open(settings: Fixtures.settings(cache))
        let writer = try await CacheStore.open(settings: Fixtures.settings(cache))
        let live = try writer.blobs.writeTemporary(Data("in flight".utf8))
        let found = verifier.blobs.temporaryFiles {
            // A clean close: the file is renamed or removed, then the lock released.
            try? FileManager.default.removeItem(atPath: live)
            writer.blobs.writer.release()
        }
        #expect(!found.contains { $0.path == live }, "\(found)")
        #expect(!found.contains { !$0.writerAlive }, "\(found)")
        #expect(try await verifier.verify().tempFiles == 0)
        try await writer.close()
        try await verifier.close()
    }

    /// ENOSPC and EDQUOT are `storage_full`, for people and for counting.
    @Test func aFullDiskIsATypedError() {
        for code in [ENOSPC, EDQUOT] {
            let error = StoreError.io("cannot write x", errno: code)
            #expect(error.code == .storageFull)
            #expect(ArtCacheError(error).reason == "storage_full")
        }
        #expect(StoreError.io("cannot write x", errno: EIO).code == .io)
    }
}
