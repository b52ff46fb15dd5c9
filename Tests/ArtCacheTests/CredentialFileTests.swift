@testable import ArtCacheCore
@testable import ArtCachePipeline
import Foundation
import Testing

/// Issue 50: one reader for the credentials systemd hands over
/// (`$CREDENTIALS_DIRECTORY/keys`, `.../tier2`), which checks a file
/// before it trusts it, as a found configuration file is checked.
@Suite("Credential files", .timeLimit(.minutes(1)))
struct CredentialFileTests {
    static let key = String(repeating: "cc", count: 32)

    /// A folder handed over, holding `name` with `text` at `mode`.
    static func credential(_ name: String, _ text: String, mode: mode_t = 0o400) -> TempDir {
        let folder = TempDir()
        let path = folder.write(name, text)
        chmod(path, mode)
        return folder
    }

    static func read(_ folder: TempDir, _ name: String = "keys") throws(ConfigError) -> (text: String, path: String)? {
        try CredentialFile.read(name, environment: ["CREDENTIALS_DIRECTORY": folder.path], key: "service.keys")
    }

    /// What systemd hands over (a regular file, 0400, the service's) is read;
    /// nothing handed over is nil, not an error.
    @Test func aCredentialIsReadAndAnAbsentOneIsNil() throws {
        let folder = Self.credential("keys", "\(Self.key)\n")
        #expect(try Self.read(folder)?.text == "\(Self.key)\n")
        #expect(try Self.read(folder)?.path == folder.file("keys"))
        #expect(try Self.read(folder, "tier2") == nil)
        #expect(try CredentialFile.read("keys", environment: [:], key: "service.keys") == nil)
        #expect(try CredentialFile.read("keys", environment: ["CREDENTIALS_DIRECTORY": ""], key: "service.keys") == nil)
    }

    /// A credential that cannot be trusted is an error naming it and why:
    /// a symlink (even to a good file), a FIFO (without hanging), a folder,
    /// a file writable by group or others, one larger than the limit, one
    /// that is not UTF-8; as root, also one owned by another user.
    @Test func anUntrustedCredentialIsRefused() throws {
        func refused(_ folder: TempDir, _ why: String, _ name: String = "keys") {
            let error = #expect(throws: ConfigError.self) { _ = try Self.read(folder, name) }
            #expect(error?.code == .unreadable && error?.source == folder.file(name) && error?.key == "service.keys")
            #expect(error?.message.contains(why) == true, "\(String(describing: error?.message)) (expected \(why))")
        }
        let linked = Self.credential("real", "\(Self.key)\n")
        #expect(symlink(linked.file("real"), linked.file("keys")) == 0)
        refused(linked, "cannot read the keys credential: a symlink")
        let fifo = TempDir()
        #expect(mkfifo(fifo.file("keys"), 0o600) == 0)
        refused(fifo, "not a regular file")
        let folder = TempDir()
        #expect(mkdir(folder.file("keys"), 0o700) == 0)
        refused(folder, "cannot read the keys credential: is a directory")
        refused(Self.credential("keys", "\(Self.key)\n", mode: 0o620), "writable by group or others (mode 620)")
        refused(Self.credential("keys", "\(Self.key)\n", mode: 0o602), "writable by group or others (mode 602)")
        refused(Self.credential("keys", String(repeating: "#\n", count: CredentialFile.maxBytes / 2 + 1)), "larger than")
        let binary = TempDir()
        FileManager.default.createFile(atPath: binary.file("keys"), contents: Data([0xFF, 0xFE, 0x00]))
        refused(binary, "the keys credential is not UTF-8 text")
        if geteuid() == 0 {
            let theirs = Self.credential("keys", "\(Self.key)\n")
            #expect(chown(theirs.file("keys"), 4321, 4321) == 0)
            refused(theirs, "owned by uid 4321, not by uid 0 or root")
        }
    }

    /// Both owners of a credential read it through the one reader: the
    /// signing keys and the tier's keys refuse a group-writable file alike.
    @Test func theKeysAndTheTiersCredentialsAreCheckedAlike() throws {
        let keys = Self.credential("keys", "\(Self.key)\n", mode: 0o660)
        var configuration = Configuration()
        let keysError = #expect(throws: ArtCacheError.self) {
            try configuration.applyCredentials(environment: ["CREDENTIALS_DIRECTORY": keys.path])
        }
        #expect(keysError?.message.contains(keys.file("keys")) == true && keysError?.message.contains("writable by group") == true,
                "\(String(describing: keysError))")
        let tier = Self.credential("tier2", "AK\nSK\n", mode: 0o660)
        let conf = TempDir()
        let file = conf.write("cache.conf", "[tier2]\nendpoint = \"http://rgw.internal\"\n")
        let tierError = #expect(throws: ArtCacheError.self) {
            _ = try Configuration.load(path: file, environment: ["CREDENTIALS_DIRECTORY": tier.path])
        }
        #expect(tierError?.message.contains(tier.file("tier2")) == true && tierError?.message.contains("writable by group") == true,
                "\(String(describing: tierError))")
        chmod(tier.file("tier2"), 0o400)
        let loaded = try Configuration.load(path: file, environment: ["CREDENTIALS_DIRECTORY": tier.path])
        #expect(loaded.tier2.accessKey == "AK" && loaded.tier2.secretKey == "SK")
    }
}
