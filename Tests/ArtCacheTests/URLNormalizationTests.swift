@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

@Suite("URL normalization and keys")
struct URLNormalizationTests {
    @Test(arguments: [
        ("HTTP://Example.COM/a/b.jpg", "http://example.com/a/b.jpg"),
        ("https://example.com:443/a.jpg", "https://example.com/a.jpg"),
        ("http://example.com:80/a.jpg", "http://example.com/a.jpg"),
        ("http://example.com:8080/a.jpg", "http://example.com:8080/a.jpg"),
        ("https://example.com:80/a.jpg", "https://example.com:80/a.jpg"),
        ("https://example.com/a.jpg#frag", "https://example.com/a.jpg"),
        ("https://example.com/a.jpg?v=4&s=100#x", "https://example.com/a.jpg?v=4&s=100"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com?x=1", "https://example.com/?x=1"),
        ("https://Example.com/Path/CASE.JPG", "https://example.com/Path/CASE.JPG"),
        ("  https://example.com/a.jpg \n", "https://example.com/a.jpg"),
        ("http://[::1]:8080/x.png", "http://[::1]:8080/x.png"),
        ("https://gravatar.com/avatar/abc?d=https%3A%2F%2Fidenticons.github.com%2Fx.png&r=x",
         "https://gravatar.com/avatar/abc?d=https%3A%2F%2Fidenticons.github.com%2Fx.png&r=x"),
    ])
    func normalizes(_ input: String, _ expected: String) throws {
        #expect(try NormalizedURL(input).string == expected)
    }

    /// Review finding: each of these spellings used to make a key (and a
    /// per-host limit) of its own.
    @Test(arguments: [
        ("http://2130706433/a.png", "http://127.0.0.1/a.png"),
        ("http://0x7f000001/a.png", "http://127.0.0.1/a.png"),
        ("http://0177.0.0.1/a.png", "http://127.0.0.1/a.png"),
        ("http://127.1/a.png", "http://127.0.0.1/a.png"),
        ("http://0x7f.0.1/a.png", "http://127.0.0.1/a.png"),
        ("http://[0::1]/a.png", "http://[::1]/a.png"),
        ("http://[0000:0000:0000:0000:0000:0000:0000:0001]:8080/a.png", "http://[::1]:8080/a.png"),
        ("http://[2001:DB8:0:0:0:0:0:1]/a.png", "http://[2001:db8::1]/a.png"),
        ("http://[::FFFF:127.0.0.1]/a.png", "http://[::ffff:127.0.0.1]/a.png"),
        ("https://example.com./a.png", "https://example.com/a.png"),
        ("https://EXAMPLE.com.:443/a.png", "https://example.com/a.png"),
        ("https://example.com/a/./b/../c.png", "https://example.com/a/c.png"),
        ("https://example.com/../../c.png", "https://example.com/c.png"),
        ("https://example.com/a/%2e%2E/c.png", "https://example.com/c.png"),
        ("https://example.com/a/.", "https://example.com/a/"),
        ("https://example.com/%41%62%7e%2d.png", "https://example.com/Ab~-.png"),
        ("https://example.com/a%2fb%3a.png?q=%7e%3d", "https://example.com/a%2Fb%3A.png?q=~%3D"),
        ("https://example.com/a.png?", "https://example.com/a.png"),
        ("https://example.com/a.png?#frag", "https://example.com/a.png"),
        ("https://ex%41mple.com/a.png", "https://example.com/a.png"),
        ("https://example.com/a..b/.c/c./x.png", "https://example.com/a..b/.c/c./x.png"),
    ])
    func oneSpellingPerResource(_ input: String, _ expected: String) throws {
        let url = try NormalizedURL(input)
        #expect(url.string == expected)
        #expect(try NormalizedURL(url.string).string == url.string, "normalizing is idempotent")
    }

    @Test func equivalentIPSpellingsShareHostAndKey() throws {
        let spellings = ["http://2130706433/x", "http://127.0.0.1/x", "http://127.0.1/x", "http://0x7F.0.0.1/x"]
        let urls = try spellings.map { try NormalizedURL($0) }
        #expect(Set(urls.map(\.key)).count == 1)
        #expect(Set(urls.map(\.host)) == ["127.0.0.1"])
        #expect(try NormalizedURL("http://[0::1]/x").host == NormalizedURL("http://[::1]/x").host)
    }

    @Test(arguments: ["http://256.0.0.1/a.png", "http://1.2.3.4.5/a.png", "http://08.0.0.1/a.png", "http://4294967296/a.png",
                      "http://[fe80::1%25eth0]/a.png", "http://[1.2.3.4]/a.png", "http://a..b/a.png", "http://./a.png",
                      "http://exa_mple!.com/a.png", "http://example.com:0/a.png"])
    func rejectsMalformedHosts(_ input: String) {
        let error = #expect(throws: ArtCacheError.self) { try NormalizedURL(input) }
        #expect(error?.code == .invalidURL)
    }

    @Test func sameKeyForEquivalentURLs() throws {
        let a = try NormalizedURL("HTTPS://Is1-SSL.mzstatic.com:443/image/100x100bb.jpg#top").key
        let b = try NormalizedURL("https://is1-ssl.mzstatic.com/image/100x100bb.jpg").key
        #expect(a == b)
        #expect(a.hex.count == 64)
        #expect(try NormalizedURL("https://x.com/a.jpg?v=1").key != NormalizedURL("https://x.com/a.jpg?v=2").key)
        #expect(CacheKey(parent: a, spec: "100x100") != CacheKey(parent: a, spec: "300x300"))
    }

    @Test(arguments: ["", "not a url", "ftp://example.com/a.jpg", "file:///etc/passwd", "/relative/path.jpg",
                      "https:///nohost.jpg", "javascript:alert(1)", "data:image/png;base64,AAAA"])
    func rejects(_ input: String) {
        let error = #expect(throws: ArtCacheError.self) { try NormalizedURL(input) }
        #expect(error?.code == .invalidURL)
    }

    /// The one-pass check that skips the host rules says yes only where the
    /// rules give the host back as it is, and no to every spelling they change or refuse.
    @Test func aHostTakenAsCanonicalIsWhatTheRulesMakeOfIt() throws {
        let canonical = ["example.com", "a-b.c_d.example", "127.0.0.1", "0.0.0.0", "255.255.255.255", "10.20.30.40",
                         "123.example.com", "1a.example", "localhost", "x"]
        for host in canonical {
            #expect(NormalizedURL.isCanonicalHost(host.utf8), "\(host)")
            #expect(try NormalizedURL.canonicalHostByRules(host, url: "http://\(host)/") == host)
        }
        let notAsIs = ["Example.com", "example.com.", ".example.com", "a..b", "", "127.1", "0x7f.0.0.1", "010.0.0.1",
                       "256.1.1.1", "1.2.3.256", "1.2.3.4.5", "1-2.3.4.5", "2130706433", "ex%41mple.com", "[::1]",
                       "a.b.c.1", "exämple.com", "a b"]
        for host in notAsIs {
            #expect(!NormalizedURL.isCanonicalHost(host.utf8), "\(host)")
            // Refused (nil) or spelled otherwise: never kept as it is.
            let spelled = try? NormalizedURL.canonicalHostByRules(host, url: "http://\(host)/")
            #expect(spelled != host, "\(host)")
        }
        // Where the one pass is stricter than the rules (a first label of
        // four digits): it says no, and the rules keep the host as it is.
        for host in ["1000.example.com"] {
            #expect(!NormalizedURL.isCanonicalHost(host.utf8), "\(host)")
            #expect(try NormalizedURL.canonicalHostByRules(host, url: "http://\(host)/") == host)
        }
        // Dot segments only where a segment starts with a dot.
        #expect(NormalizedURL.removeDotSegments("/fetch/1.jpg") == "/fetch/1.jpg")
        #expect(NormalizedURL.removeDotSegments("/a/./b/../c.jpg") == "/a/c.jpg")
        #expect(NormalizedURL.removeDotSegments("/a/.hidden/x") == "/a/.hidden/x")
    }

    /// Whitespace trimmed as Foundation trims it, by bytes where the ends are ASCII.
    @Test(arguments: ["  max-age=60 ", "\tx\t", "", "   ", "\r\nhttp://h/a.jpg\n", "a b", "\u{A0}nbsp\u{A0}", " \u{2003}em\u{2003} ",
                      "x\u{A0} ", "é ", "\u{0B}v\u{0C}"])
    func whitespaceIsTrimmedAsFoundationTrimsIt(_ text: String) {
        #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespaces), "\(Array(text.unicodeScalars))")
        #expect(text.trimmingWhitespace(newlines: true) == text.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(Array(text.unicodeScalars))")
    }
}
