@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServiceGrammar
@testable import ArtCacheStore
import Foundation
import Testing

/// The service URL grammar, signing and `[service]` / `[presets]` settings,
/// as pure functions.
@Suite("Service URL grammar and signing")
struct ServiceGrammarTests {
    static let key = [UInt8](repeating: 7, count: 32)
    static let oldKey = [UInt8](repeating: 9, count: 32)

    @Test func optionsParseAndPrintCanonically() throws {
        let options = try ThumbnailOptions(parsing: "q=70,fit=cover,300x200,format=webp")
        #expect(options == ThumbnailOptions(size: .init(width: 300, height: 200), fit: .cover, format: .webp, quality: 70))
        #expect(options.description == "300x200,fit=cover,f=webp,q=70")
        #expect(try ThumbnailOptions(parsing: options.description) == options)
        #expect(try ThumbnailOptions(parsing: "original").isOriginal)
        #expect(try ThumbnailOptions(parsing: "p=avatar").preset == "avatar")
        #expect(ThumbnailOptions.original.description == "original")
    }

    /// One table of the classes both ways: each name parses to a priority
    /// whose class is that name; priorities beyond them print as the nearest.
    @Test func priorityClassNamesGoBothWays() throws {
        for name in ["high", "normal", "low"] {
            let priority = try #require(try ThumbnailOptions(parsing: "pri=\(name)").priority)
            #expect(ThumbnailOptions.className(priority) == name)
        }
        #expect(ImagePriority.allCases.map(ThumbnailOptions.className) == ["low", "low", "normal", "high", "high"])
        let error = #expect(throws: ArtCacheError.self) { try ThumbnailOptions(parsing: "pri=veryHigh") }
        #expect(error?.code == .invalidRequest)
    }

    /// `pri=high|normal|low`: parsed anywhere among the tokens, written last,
    /// allowed with `original`, carried through presets; part of the signed
    /// text, so another class needs another signature.
    @Test func priorityClassesParseSignAndPrint() throws {
        let options = try ThumbnailOptions(parsing: "pri=low,100x100,fit=cover")
        #expect(options.priority == .low && options.size == .init(100) && options.fit == .cover)
        #expect(options.description == "100x100,fit=cover,pri=low")
        #expect(try ThumbnailOptions(parsing: "100x100,pri=high").priority == .high)
        #expect(try ThumbnailOptions(parsing: "100x100,pri=normal").priority == .normal)
        #expect(try ThumbnailOptions(parsing: "100x100").priority == nil)
        let original = try ThumbnailOptions(parsing: "original,pri=high")
        #expect(original.isOriginal && original.priority == .high && original.description == "original,pri=high")
        #expect(try ThumbnailOptions(parsing: "pri=low").description == "original,pri=low")
        #expect(ThumbnailOptions(size: .init(10), priority: .veryHigh).description == "10x10,pri=high")  // the nearest class
        #expect(ThumbnailOptions(size: .init(10), priority: .veryLow).description == "10x10,pri=low")
        // presets: an explicit class wins, else the preset's
        let presets = ["avatar": ThumbnailOptions(size: .init(100), priority: .low)]
        #expect(try ThumbnailOptions(parsing: "p=avatar").resolved(presets: presets).priority == .low)
        #expect(try ThumbnailOptions(parsing: "p=avatar,pri=high").resolved(presets: presets).priority == .high)
        // the request the options name
        #expect(options.request(url: "https://example.com/a.jpg").priority == .low)
        #expect(options.request(url: "https://example.com/a.jpg", priority: .normal).priority == .normal)
        // signed: changing the class breaks the signature
        let signer = ServiceURLSigner(keys: [Self.key])
        let path = signer.path(for: "https://example.com/a.jpg", options: options)
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        #expect(parts[2] == "100x100,fit=cover,pri=low")
        #expect(signer.isValid(signature: String(parts[1]), for: "/\(parts[2])/\(parts[3])"))
        #expect(!signer.isValid(signature: String(parts[1]), for: "/100x100,fit=cover,pri=high/\(parts[3])"))
        #expect(!signer.isValid(signature: String(parts[1]), for: "/100x100,fit=cover/\(parts[3])"))
    }

    /// Each names the token at fault: `pri`, or `original` with a size after it.
    @Test(arguments: [("pri=urgent", "pri"), ("pri=", "pri"), ("pri=HIGH", "pri"), ("100x100,pri=veryhigh", "pri"),
                      ("pri=low,pri=high", "pri"), ("original,pri=low,100x100", "original")])
    func malformedPriorityIsAnInvalidRequestNamingPri(_ text: String, _ named: String) {
        let error = #expect(throws: ArtCacheError.self) { try ThumbnailOptions(parsing: text) }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains(named) == true, "\(String(describing: error?.message))")
    }

    @Test(arguments: ["", "300", "300x", "x300", "0x10", "-1x5", "300x300,300x300", "fit=stretch", "q=0", "q=101", "q=8a",
                      "f=gif", "original,100x100", "100x100,original", "zoom=2", "p=Bad!", "100x100,,q=80", "１００x100"])
    func malformedOptionsAreInvalidRequests(_ text: String) {
        let error = #expect(throws: ArtCacheError.self) { try ThumbnailOptions(parsing: text) }
        #expect(error?.code == .invalidRequest)
    }

    @Test func presetsFillWhatIsNotGivenAndUnknownOnesFail() throws {
        let presets = ["avatar": ThumbnailOptions(size: .init(100), fit: .cover, quality: 70)]
        let merged = try ThumbnailOptions(parsing: "p=avatar,q=90").resolved(presets: presets)
        #expect(merged == ThumbnailOptions(size: .init(100), fit: .cover, quality: 90))
        #expect(throws: ArtCacheError.self) { try ThumbnailOptions(parsing: "p=banner").resolved(presets: presets) }
        // fit, format or quality need a size: originals are served as stored
        #expect(throws: ArtCacheError.self) { try ThumbnailOptions(parsing: "fit=cover").resolved(presets: [:]) }
    }

    @Test func signaturesVerifyWithEveryKeyAndOnlyForTheirPath() throws {
        let signer = ServiceURLSigner(keys: [Self.key], salt: [1, 2, 3])
        let path = signer.path(for: "https://example.com/a.jpg", options: try ThumbnailOptions(parsing: "100x100,fit=cover"))
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        #expect(parts.count == 4 && parts[0].isEmpty)
        #expect(parts[2] == "100x100,fit=cover")
        #expect(ServiceURLSigner.decodeSource(String(parts[3])) == "https://example.com/a.jpg")
        #expect(!parts[3].contains("=") && !parts[1].contains("="))
        let signature = String(parts[1])
        let rest = "/\(parts[2])/\(parts[3])"
        #expect(signer.isValid(signature: signature, for: rest))
        // tampered options, another source, another salt, a truncated signature
        #expect(!signer.isValid(signature: signature, for: "/200x200,fit=cover/\(parts[3])"))
        #expect(!signer.isValid(signature: signature, for: "/\(parts[2])/\(ServiceURLSigner.encodeSource("https://example.com/b.jpg"))"))
        #expect(!ServiceURLSigner(keys: [Self.key]).isValid(signature: signature, for: rest))
        #expect(!signer.isValid(signature: String(signature.dropLast()), for: rest))
        #expect(!signer.isValid(signature: "unsafe", for: rest))
        // rotation: the new key signs first, URLs signed with the old key still verify
        let old = ServiceURLSigner(keys: [Self.oldKey], salt: [1, 2, 3])
        let rotated = ServiceURLSigner(keys: [Self.key, Self.oldKey], salt: [1, 2, 3])
        let oldPath = old.path(for: "https://example.com/a.jpg")
        let oldParts = oldPath.split(separator: "/", omittingEmptySubsequences: false)
        #expect(rotated.isValid(signature: String(oldParts[1]), for: "/\(oldParts[2])/\(oldParts[3])"))
        #expect(rotated.path(for: "https://example.com/a.jpg") == ServiceURLSigner(keys: [Self.key], salt: [1, 2, 3]).path(for: "https://example.com/a.jpg"))
        // HMAC-SHA256 over salt + path, base64url: an independent check with a known vector
        #expect(ServiceURLSigner(keys: [Array("key".utf8)]).signature(for: "The quick brown fox jumps over the lazy dog")
                == "97yD9DBThCSxMpjmqm-xQ-9NWaFJRhdZl0edvC0aPNg")
        // without keys: the unsigned marker
        #expect(ServiceURLSigner(keys: []).path(for: "https://example.com/a.jpg").hasPrefix("/unsafe/original/"))
    }

    @Test func base64URLRoundTripsAndRefusesOtherAlphabets() {
        for text in ["https://a.example/x?y=1&z=ü", "h", "ht", "htt", String(repeating: "é", count: 50)] {
            #expect(ServiceURLSigner.decodeSource(ServiceURLSigner.encodeSource(text)) == text)
        }
        #expect(ServiceURLSigner.decodeSource("aGVsbG8") == "hello")
        #expect(ServiceURLSigner.decodeSource("aGVsbG8=") == nil)  // one spelling per source: no padding
        #expect(ServiceURLSigner.decodeSource("a+b/") == nil)  // standard alphabet refused
        #expect(ServiceURLSigner.decodeSource("a") == nil)
        #expect(ServiceURLSigner.decodeSource("_w") == nil)  // not UTF-8
    }

    @Test func serviceSettingsFromFileAndEnvironment() throws {
        let dir = TempDir()
        let path = dir.write("cache.conf", """
            [service]
            listen = "[::1]:9090"
            keys = ["\(String(repeating: "ab", count: 32))"]
            salt = "0102"
            max_inflight = 4
            queue = 0
            timeout = "5s"
            [presets]
            avatar = "100x100,fit=cover"
            hero = "1200x600,q=70,f=webp"
            """)
        let configuration = try Configuration.load(path: path, environment: [
            "ARTCACHE_SERVICE_KEYS": "\(String(repeating: "cd", count: 16)),\(String(repeating: "ef", count: 16))",
            "ARTCACHE_PRESETS_THUMB": "64x64",
        ])
        let service = configuration.service
        #expect(service.host == "::1" && service.port == 9090 && service.listen == "[::1]:9090" && service.isLoopback)
        #expect(service.keys == [[UInt8](repeating: 0xCD, count: 16), [UInt8](repeating: 0xEF, count: 16)])
        #expect(service.salt == [1, 2] && service.maxInflight == 4 && service.queue == 0 && service.timeout == 5)
        #expect(configuration.presets["avatar"] == ThumbnailOptions(size: .init(100), fit: .cover))
        #expect(configuration.presets["hero"]?.format == .webp)
        #expect(configuration.presets["thumb"] == ThumbnailOptions(size: .init(64)))
        let defaults = Configuration.defaults.service
        #expect(defaults.listen == "127.0.0.1:8080" && defaults.keys.isEmpty && !defaults.allowUnsigned)
    }

    @Test(arguments: [
        ("[service]\nkeys = [\"abc\"]", "service.keys"),
        ("[service]\nkeys = [\"00112233\"]", "service.keys"),
        ("[service]\nsalt = \"xyz\"", "service.salt"),
        ("[service]\nlisten = \"8080\"", "service.listen"),
        ("[service]\nlisten = \"127.0.0.1:70000\"", "service.listen"),
        ("[service]\nmax_inflight = 0", "service.max_inflight"),
        ("[presets]\navatar = \"100x100,fit=round\"", "presets.avatar"),
        ("[presets]\navatar = \"p=other\"", "presets.avatar"),
        ("[presets]\nAvatar = \"100x100\"", "presets.Avatar"),
        ("[presets]\navatar = 100", "presets.avatar"),
        ("[download]\nallowed_sources = [\"https://example.com\"]", "download.allowed_sources"),
        ("[download]\nallowed_sources = [\"ex*mple.com\"]", "download.allowed_sources"),
    ])
    func badServiceSettingsNameTheirKey(_ text: String, _ key: String) {
        do {
            _ = try Configuration(values: Configuration.parse(toml: text, source: "test.conf"), file: "test.conf")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.key == key, "\(error)")
        }
    }

    @Test func hostPatterns() {
        let policy = SourcePolicy(patterns: ["*.mzstatic.com", "avatars.githubusercontent.com", "127.0.0.1"].compactMap(HostPattern.init))
        for host in ["is1-ssl.mzstatic.com", "A.B.MZSTATIC.COM.", "avatars.githubusercontent.com", "127.0.0.1"] {
            #expect(policy.allows(host: host), "\(host)")
        }
        for host in ["mzstatic.com", "evilmzstatic.com", "mzstatic.com.evil.net", "githubusercontent.com", "127.0.0.2", ""] {
            #expect(!policy.allows(host: host), "\(host)")
        }
        #expect(SourcePolicy().allows(host: "anything.example"))
        #expect(SourcePolicy(patterns: [HostPattern("*")!]).allows(host: "x.y"))
        #expect(policy.allows(url: "https://is1-ssl.mzstatic.com/a.jpg") && !policy.allows(url: "https://example.com/a.jpg"))
        #expect(HostPattern("*.") == nil && HostPattern("a.*.com") == nil && HostPattern("") == nil)
    }

    @Test func listenAddresses() {
        #expect(ServiceSettings.parseListen("0.0.0.0:80")! == ("0.0.0.0", 80))
        #expect(ServiceSettings.parseListen("[::]:0")! == ("::", 0))
        #expect(ServiceSettings.parseListen("localhost:8080")! == ("localhost", 8080))
        for bad in ["::1:80", "[::1]80", "[zz]:80", "host:", ":80", "host:http", "host:-1"] {
            #expect(ServiceSettings.parseListen(bad) == nil, "\(bad)")
        }
        var settings = ServiceSettings()
        for (host, loopback) in [("127.0.0.1", true), ("127.9.9.9", true), ("::1", true), ("localhost", true),
                                 ("0.0.0.0", false), ("::", false), ("192.168.1.2", false), ("example.com", false)] {
            settings.host = host
            #expect(settings.isLoopback == loopback, "\(host)")
        }
    }
}
