import Foundation
import Testing
@testable import ArtCache

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
}
