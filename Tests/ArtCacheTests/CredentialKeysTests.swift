@testable import ArtCacheCore
@testable import ArtCachePipeline
@testable import ArtCacheServiceGrammar
import Foundation
import Testing

/// Issue 34: signing keys come as a systemd credential
/// (`LoadCredential=keys:/etc/artcache/keys`), not through the environment.
/// The tests hand it over themselves: `CREDENTIALS_DIRECTORY` is a folder of
/// theirs, as systemd's would be.
@Suite("Keys as credentials", .timeLimit(.minutes(3)))
struct CredentialKeysTests {
    static func hex(_ byte: String, _ count: Int = 32) -> String { String(repeating: byte, count: count) }
    static func key(_ byte: UInt8, _ count: Int = 32) -> [UInt8] { [UInt8](repeating: byte, count: count) }

    /// `$CREDENTIALS_DIRECTORY/keys`, else `ARTCACHE_SERVICE_KEYS`, else
    /// `[service] keys`; in the file, comments, blank lines, spaces and CRLF
    /// line ends are ignored and the order is kept (the first signs).
    @Test func credentialThenEnvironmentThenFile() throws {
        let dir = TempDir(), credentials = TempDir()
        let path = dir.write("cache.conf", "[service]\nkeys = [\"\(Self.hex("aa"))\"]\n")
        _ = credentials.write("keys", "# signing keys of artcache serve\n\n  \(Self.hex("cc"))  \r\n# older, still verifies\n\(Self.hex("dd", 16))\n\n")
        let environment = ["ARTCACHE_SERVICE_KEYS": Self.hex("bb"), "CREDENTIALS_DIRECTORY": credentials.path]
        func keys(_ environment: [String: String]) throws -> [[UInt8]] {
            var configuration = try Configuration.load(path: path, environment: environment)
            try configuration.applyCredentials(environment: environment)
            return configuration.service.keys
        }
        #expect(try keys(environment) == [Self.key(0xCC), Self.key(0xDD, 16)])
        #expect(try keys(environment.filter { $0.key != "ARTCACHE_SERVICE_KEYS" }) == [Self.key(0xCC), Self.key(0xDD, 16)])
        // Nothing handed over: a folder without `keys`, or no folder at all.
        try FileManager.default.removeItem(atPath: credentials.file("keys"))
        #expect(try keys(environment) == [Self.key(0xBB)])
        #expect(try keys(["CREDENTIALS_DIRECTORY": ""]) == [Self.key(0xAA)])
        #expect(try keys([:]) == [Self.key(0xAA)])
    }

    /// A credential that is there but says nothing (empty, only comments),
    /// is not readable, or holds a line that is not a key is an error naming
    /// the file: never a quiet fall back to other keys.
    @Test func aBadCredentialIsAnError() throws {
        let credentials = TempDir()
        let environment = ["ARTCACHE_SERVICE_KEYS": Self.hex("bb"), "CREDENTIALS_DIRECTORY": credentials.path]
        func failure() -> ArtCacheError? {
            var configuration = Configuration()
            return #expect(throws: ArtCacheError.self) { try configuration.applyCredentials(environment: environment) }
        }
        for (text, mentions) in [("", "no key in the file"), ("# only a comment\n\n", "no key in the file"),
                                 ("\(Self.hex("cc"))\nnot-hex\n", "line 2 is not a hex key"),
                                 ("\(Self.hex("cc", 8))\n", "line 1 is not a hex key")] {
            _ = credentials.write("keys", text)
            let error = failure()
            #expect(error?.code == .configuration)
            #expect(error?.message.contains(credentials.file("keys")) == true && error?.message.contains(mentions) == true,
                    "\(String(describing: error?.message))")
        }
        try FileManager.default.removeItem(atPath: credentials.file("keys"))
        #expect(mkdir(credentials.file("keys"), 0o700) == 0)
        #expect(failure()?.message.contains("cannot read the keys credential") == true)
    }

    /// Through the CLI: `sign` signs with the credential's first key over
    /// the environment's, and `serve` with an empty credential stops at
    /// start with a configuration error (exit 78) naming it.
    @Test func theCLIReadsTheCredential() async throws {
        let dir = TempDir(), credentials = TempDir()
        _ = credentials.write("keys", "# rotated\n\(Self.hex("cc"))\n\(Self.hex("bb"))\n")
        let environment = ["ARTCACHE_SERVICE_KEYS": Self.hex("bb"), "CREDENTIALS_DIRECTORY": credentials.path]
        let signed = try await CLI.run(["sign", "https://example.com/a.jpg", "--size", "40x40", "--cache-dir", dir.file("c")],
                                       environment: environment, directory: dir.path)
        #expect(signed.status == 0, "\(signed.stderr)")
        let expected = ServiceURLSigner(keys: [Self.key(0xCC)]).path(for: "https://example.com/a.jpg", options: ThumbnailOptions(size: .init(40)))
        #expect(signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == expected)
        _ = credentials.write("keys", "# no key yet\n")
        let served = try await CLI.run(["serve", "--listen", "127.0.0.1:0", "--cache-dir", dir.file("c")],
                                       environment: environment, directory: dir.path)
        #expect(served.status == 78, "\(served.stdout) \(served.stderr)")
        #expect(served.stderr.contains(credentials.file("keys")) && served.stderr.contains("no key in the file"), "\(served.stderr)")
        #expect(!served.stdout.contains("serving"))
    }
}
