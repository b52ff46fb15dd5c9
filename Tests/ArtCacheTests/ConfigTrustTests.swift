@testable import ArtCacheCore
@testable import ArtCachePipeline
@testable import ArtCacheStore
import Foundation
import Testing

/// Issue 34: the CLI runs as root beside the service, in folders others can
/// write. A `cache.conf` it finds (rather than is given) is read only when
/// it is root's or the caller's and nobody else can write it.
@Suite("cache.conf ownership", .timeLimit(.minutes(3)))
struct ConfigTrustTests {
    static let isRoot = geteuid() == 0
    /// `nobody`: another user, for the tests that give files away (root only).
    static let other: uid_t = 65534

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    /// A found file writable by group or others is skipped with its reason,
    /// whoever owns it; the lookup goes on to the next place.
    @Test func writableByOthersIsSkipped() throws {
        let dir = TempDir(), home = TempDir(), system = TempDir()
        let env = ["HOME": home.path]
        let local = dir.write("cache.conf", "[cache]\nmax_entries = 7\n")
        let systemPath = system.write("cache.conf", "[cache]\nmax_entries = 9\n")
        func lookUp() -> ConfigLookup {
            Configuration.lookUp(explicitPath: nil, environment: env, currentDirectory: dir.path, systemPath: systemPath)
        }
        #expect(chmod(local, 0o644) == 0)
        let trusted = lookUp()
        #expect(trusted.path == local && trusted.skipped.isEmpty)
        #expect(try Configuration.load(trusted, environment: [:]).cache.maxEntries == 7)
        for mode: mode_t in [0o664, 0o646, 0o666] {
            #expect(chmod(local, mode) == 0)
            let lookup = lookUp()
            #expect(lookup.path == systemPath, "mode \(String(mode, radix: 8))")
            #expect(lookup.skipped == [.init(path: local, reason: "writable by group or others (mode \(String(mode, radix: 8)))")])
            #expect(try Configuration.load(lookup, environment: [:]).cache.maxEntries == 9)
            #expect(Configuration.locate(explicitPath: nil, environment: env, currentDirectory: dir.path, systemPath: systemPath) == systemPath)
        }
        // The system's file follows the same rule; then the built-in defaults.
        #expect(chmod(systemPath, 0o666) == 0)
        let none = lookUp()
        #expect(none.path == nil && none.skipped.map(\.path) == [local, systemPath])
        #expect(try Configuration.load(none, environment: [:]).cache.maxEntries == Configuration.defaults.cache.maxEntries)
        // A file that is named (--config, $ARTCACHE_CONFIG) is read as it is.
        #expect(Configuration.lookUp(explicitPath: local, environment: env, currentDirectory: dir.path, systemPath: systemPath).path == local)
        #expect(try Configuration.load(path: local, environment: [:]).cache.maxEntries == 7)
    }

    /// Another user's `./cache.conf`, XDG file or system file is skipped by
    /// root; so is another user's symlink, even to a file root owns, and a
    /// symlink of root's to another user's file (the opened file's owner is
    /// what counts, checked on the descriptor the text is read from).
    @Test(.enabled(if: isRoot, "gives files to uid 65534: needs root"))
    func anotherUsersFilesAreSkipped() throws {
        let dir = TempDir(), home = TempDir(), system = TempDir()
        let env = ["HOME": home.path]
        let systemPath = system.file("cache.conf")
        func lookUp(_ cwd: String) -> ConfigLookup {
            Configuration.lookUp(explicitPath: nil, environment: env, currentDirectory: cwd, systemPath: systemPath)
        }
        let local = dir.write("cache.conf", "[cache]\nmax_entries = 7\n")
        #expect(chown(local, Self.other, Self.other) == 0)
        #expect(lookUp(dir.path).path == nil)
        #expect(lookUp(dir.path).skipped == [.init(path: local, reason: "owned by uid 65534, not by uid 0 or root")])
        // The user's file, then the system's: the same rule.
        try FileManager.default.createDirectory(atPath: home.path + "/.config/artcache", withIntermediateDirectories: true)
        let user = home.path + "/.config/artcache/cache.conf"
        FileManager.default.createFile(atPath: user, contents: Data("[cache]\nmax_entries = 8\n".utf8))
        #expect(chown(user, Self.other, Self.other) == 0)
        FileManager.default.createFile(atPath: systemPath, contents: Data("[cache]\nmax_entries = 9\n".utf8))
        #expect(lookUp(dir.path).path == systemPath && lookUp(dir.path).skipped.map(\.path) == [local, user])
        #expect(chown(systemPath, Self.other, Self.other) == 0)
        #expect(lookUp(dir.path).path == nil && lookUp(dir.path).skipped.count == 3)
        #expect(chown(systemPath, 0, 0) == 0)

        // Symlinks: another user's link to a file of root's, root's link to another user's file.
        let links = TempDir()
        let rootsFile = links.write("roots.conf", "[cache]\nmax_entries = 5\n")
        #expect(symlink(rootsFile, links.file("cache.conf")) == 0 && lchown(links.file("cache.conf"), Self.other, Self.other) == 0)
        #expect(lookUp(links.path).path == systemPath)
        #expect(lookUp(links.path).skipped.first == .init(path: links.file("cache.conf"),
                                                          reason: "a symlink owned by uid 65534, not by uid 0 or root"))
        #expect(unlink(links.file("cache.conf")) == 0 && symlink(local, links.file("cache.conf")) == 0)
        #expect(lookUp(links.path).skipped.first == .init(path: links.file("cache.conf"), reason: "owned by uid 65534, not by uid 0 or root"))
        // Root's own link to root's own file is read (dotfiles are often
        // links), as the file it names (a relative directory is relative to that file).
        #expect(unlink(links.file("cache.conf")) == 0 && symlink(rootsFile, links.file("cache.conf")) == 0)
        let linked = lookUp(links.path)
        #expect(linked.path == rootsFile && linked.text == "[cache]\nmax_entries = 5\n" && linked.skipped.isEmpty)
        // The rule is the caller's: for uid 65534 its own file is trusted and root's too.
        #expect(Configuration.lookUp(explicitPath: nil, environment: env, currentDirectory: dir.path, systemPath: systemPath,
                                     owner: Self.other).path == local)
    }

    /// A root `artcache stats` in a folder where another user left a
    /// `cache.conf` naming a folder of root's with `mode = "0777"`: the file
    /// is skipped with a warning on stderr, the folder keeps its mode and
    /// gets no cache. A group-writable file of root's is skipped the same
    /// way. The same file, root's and private, is read (and `verify
    /// --repair` changes the mode): what the test would see without the rule.
    @Test(.enabled(if: isRoot, "gives files to uid 65534: needs root"))
    func aRootCLISkipsAForeignConfig() async throws {
        let dir = TempDir(), home = TempDir()
        let target = dir.file("target")
        #expect(mkdir(target, 0o700) == 0 && chmod(target, 0o700) == 0)
        let local = dir.write("cache.conf", "[cache]\ndirectory = \"\(target)\"\nmode = \"0777\"\n")
        let env = ["HOME": home.path, "XDG_CONFIG_HOME": home.path + "/.config"]
        for (owner, mode, reason) in [(Self.other, mode_t(0o644), "owned by uid 65534, not by uid 0 or root"),
                                      (uid_t(0), mode_t(0o664), "writable by group or others (mode 664)")] {
            #expect(chown(local, owner, owner) == 0 && chmod(local, mode) == 0)
            // `verify --repair` creates a cache where it finds none: the defaults' one.
            let result = try await CLI.run(["verify", "--repair"], environment: env, directory: dir.path)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.contains("artcache: warning: \(local): \(reason); not read"), "\(result.stderr)")
            #expect(FileManager.default.fileExists(atPath: home.path + "/.cache/artcache/index.sqlite"), "the defaults")
            #expect(Self.mode(target) == 0o700)
            #expect(!FileManager.default.fileExists(atPath: target + "/index.sqlite"))
        }
        #expect(chown(local, 0, 0) == 0 && chmod(local, 0o600) == 0)
        // Read, but `stats` creates no cache and changes no mode (issue 49); `verify --repair` does.
        let stats = try await CLI.run(["stats"], environment: env, directory: dir.path)
        #expect(stats.status == 1 && stats.stderr.contains("no cache at \(target)"), "\(stats.stderr)")
        #expect(Self.mode(target) == 0o700)
        let trusted = try await CLI.run(["verify", "--repair"], environment: env, directory: dir.path)
        #expect(trusted.status == 0 && !trusted.stderr.contains("warning"), "\(trusted.stderr)")
        #expect(Self.mode(target) == 0o777 && FileManager.default.fileExists(atPath: target + "/index.sqlite"))
    }

    /// A config of root's naming a folder another user owns: root uses it
    /// but never changes its mode (nor that of the files in it that are not root's).
    @Test(.enabled(if: isRoot, "gives files to uid 65534: needs root"))
    func aFolderOfAnotherUserKeepsItsMode() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        var settings = Fixtures.settings(cache, inlineMax: 0)
        settings.mode = 0o700
        let store = try await CacheStore.open(settings: settings)
        try await store.close()
        #expect(chown(cache, Self.other, Self.other) == 0 && chmod(cache, 0o711) == 0)
        #expect(chown(cache + "/index.sqlite", Self.other, Self.other) == 0 && chmod(cache + "/index.sqlite", 0o640) == 0)
        settings.mode = 0o770
        let again = try await CacheStore.open(settings: settings)
        try await again.close()
        #expect(Self.mode(cache) == 0o711)
        #expect(Self.mode(cache + "/index.sqlite") == 0o640)
        #expect(Self.mode(cache + "/objects") == 0o770, "root's own folders in it do follow the mode")
    }
}
