@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
import Foundation
import Testing

/// Review finding: the redirect allowlist read `Location` with Foundation's
/// URL parser and let the hop through when that parser failed, while libcurl
/// (which follows the hop) reads it with its own. The allowlist must see the
/// URL libcurl will follow, and refuse what it cannot read.
@Suite("Redirect Location as libcurl reads it", .timeLimit(.minutes(3)))
struct RedirectLocationTests {
    enum Outcome: Equatable, CustomStringConvertible {
        case status(Int)
        case refused(DownloadError.Code)

        var description: String {
            switch self {
            case .status(let status): "status \(status)"
            case .refused(let code): code.rawValue
            }
        }
    }

    /// The origin's `/location/…` path that answers with exactly this `Location`.
    static func path(_ location: String) -> String {
        "/location/" + location.utf8.map { String(format: "%%%02X", $0) }.joined()
    }

    /// The origin is 127.0.0.1; `allowed_sources` lists it and `[::1]`; the
    /// address policy allows 127.0.0.0/8 only (so an allowed hop to `[::1]`
    /// is refused before it connects: nothing is sent there).
    func harness() async throws -> DownloaderTests.Harness {
        let h = try await DownloaderTests.Harness {
            $0.allowedSources = [HostPattern("127.0.0.1")!, HostPattern("[::1]")!]
            $0.allowedNetworks = [IPNetwork("127.0.0.0/8")!]
            $0.retries = 0
        }
        h.origin.register("a%20b.jpg", .init(body: h.jpeg, contentType: "image/jpeg"))
        return h
    }

    func outcome(_ h: DownloaderTests.Harness, _ location: String) async -> Outcome {
        let location = location.replacingOccurrences(of: "PORT", with: "\(h.origin.port)")
        do {
            return .status(try await h.pipeline.downloader.fetch(h.origin.url(Self.path(location))).status)
        } catch {
            return error.status.map(Outcome.status) ?? .refused(error.code)
        }
    }

    static let cases: [(location: String, expected: Outcome, why: String)] = [
        ("/img/a.jpg", .status(200), "relative"),
        ("../img/a.jpg", .status(200), "relative, with a dot segment"),
        ("  /img/a.jpg\t", .status(200), "surrounding whitespace (libcurl trims it)"),
        ("/img/a b.jpg", .status(200), "a space in the path (libcurl encodes it)"),
        ("//127.0.0.1:PORT/img/a.jpg", .status(200), "protocol-relative, allowed host"),
        ("//localhost:PORT/img/a.jpg", .refused(.blockedSource), "protocol-relative, other host"),
        ("http://localhost:PORT/img/a.jpg", .refused(.blockedSource), "absolute, other host"),
        ("HTTP://LOCALHOST.:PORT/img/a.jpg", .refused(.blockedSource), "upper case, trailing dot"),
        ("http://0x7f.1:PORT/img/a.jpg", .status(200), "hex/short IPv4: libcurl connects to 127.0.0.1"),
        ("http://2130706433:PORT/img/a.jpg", .status(200), "decimal IPv4: libcurl connects to 127.0.0.1"),
        ("http://%31%32%37.0.0.1:PORT/img/a.jpg", .status(200), "percent-encoded host"),
        ("http://127.0.0.1:PORT\\@localhost:PORT/img/a.jpg", .refused(.blockedSource), "backslash: userinfo to libcurl, host localhost"),
        ("/\\localhost:PORT/img/a.jpg", .status(404), "backslash: a path to libcurl, same host"),
        ("http:/localhost:PORT/img/a.jpg", .refused(.blockedSource), "one slash: libcurl reads host localhost"),
        ("http://[::1]:PORT/img/a.jpg", .refused(.blockedAddress), "IPv6 literal on the list (refused by address, not connected)"),
        ("http://[0:0::1]:PORT/img/a.jpg", .refused(.blockedAddress), "IPv6 literal, another spelling"),
        ("http://x|.localhost:PORT/img/a.jpg", .refused(.blockedSource), "a host Foundation cannot parse; libcurl goes to loopback"),
        ("http://[::1/img/a.jpg", .refused(.invalidURL), "unclosed IPv6 literal"),
        ("http://127.0.0.1:99999/img/a.jpg", .refused(.invalidURL), "port out of range"),
        ("http:\\\\localhost:PORT\\img\\a.jpg", .refused(.invalidURL), "backslashes after the scheme"),
        ("http://127.0.0.1 :PORT/img/a.jpg", .refused(.invalidURL), "a space in the host"),
        ("javascript:alert(1)", .refused(.refusedScheme), "not a scheme libcurl knows"),
        ("ftp://127.0.0.1:PORT/a.jpg", .refused(.refusedScheme), "a scheme redirects may not use"),
    ]

    @Test func locationsAreReadAsLibcurlReadsThem() async throws {
        let h = try await harness()
        for (location, expected, why) in Self.cases {
            let got = await outcome(h, location)
            #expect(got == expected, "\(why): Location \(location.debugDescription) gave \(got)")
        }
        // Only the hops that were allowed reached an image.
        let served = Self.cases.filter { $0.expected == .status(200) }.count
        #expect(h.origin.requestLog.filter { $0.hasPrefix("/img/") }.count == served)
    }

    /// Without an allowlist any host may be followed, but a Location libcurl
    /// cannot parse is still refused, as the same typed error.
    @Test func anUnparseableLocationIsRefusedWithoutAnAllowlistToo() async throws {
        let h = try await DownloaderTests.Harness { $0.retries = 0 }
        #expect(await outcome(h, "/img/a.jpg") == .status(200))
        #expect(await outcome(h, "http://[::1/img/a.jpg") == .refused(.invalidURL))
        #expect(await outcome(h, "http://127.0.0.1 :PORT/img/a.jpg") == .refused(.invalidURL))
    }

    // MARK: The parsing functions, as pure functions

    static let base = "http://127.0.0.1:8080/a/b/c.jpg"

    @Test(arguments: [
        ("/img/a.jpg", "http://127.0.0.1:8080/img/a.jpg", "127.0.0.1"),
        ("img/a.jpg", "http://127.0.0.1:8080/a/b/img/a.jpg", "127.0.0.1"),
        ("../img/a.jpg", "http://127.0.0.1:8080/a/img/a.jpg", "127.0.0.1"),
        ("?q=1", "http://127.0.0.1:8080/a/b/c.jpg?q=1", "127.0.0.1"),
        ("//localhost:9/x", "http://localhost:9/x", "localhost"),
        ("https://Example.COM./x", "https://Example.COM./x", "Example.COM."),
        ("http://0x7f.1/x", "http://127.0.0.1/x", "127.0.0.1"),
        ("http://2130706433/x", "http://127.0.0.1/x", "127.0.0.1"),
        ("http://%31%32%37.0.0.1/x", "http://127.0.0.1/x", "127.0.0.1"),
        ("http://[0:0::1]:9/x", "http://[::1]:9/x", "[::1]"),
        ("http://a.test\\@b.test/x", "http://a.test\\@b.test/x", "b.test"),
        ("/\\b.test/x", "http://127.0.0.1:8080/\\b.test/x", "127.0.0.1"),
        ("http:/b.test/x", "http://b.test/x", "b.test"),
        ("/img/a b.jpg", "http://127.0.0.1:8080/img/a%20b.jpg", "127.0.0.1"),
        ("http://x|.localhost/x", "http://x|.localhost/x", "x|.localhost"),
    ])
    func resolvesAsLibcurl(_ location: String, _ url: String, _ host: String) {
        #expect(RedirectTarget.resolve(Array(location.utf8), against: Self.base) == .follow(url: url, host: host))
    }

    @Test(arguments: ["http://[::1/x", "http://b.test:99999/x", "http:\\\\b.test\\x", "http://b.test :80/x",
                      "http://exa mple/x", "http://", "//", "javascript:alert(1)"])
    func refusesWhatLibcurlCannotFollow(_ location: String) {
        guard case .unfollowable(let reason, let unsupportedScheme) = RedirectTarget.resolve(Array(location.utf8), against: Self.base) else {
            Issue.record("\(location.debugDescription) was followed")
            return
        }
        #expect(!reason.isEmpty)
        #expect(unsupportedScheme == location.hasPrefix("javascript:"))
    }

    /// A NUL ends the Location for libcurl (a C string): nothing after it is read.
    @Test func aNulEndsTheLocation() {
        let location = Array("/img/a.jpg".utf8) + [0] + Array("http://b.test/".utf8)
        #expect(RedirectTarget.resolve(location, against: Self.base) == .follow(url: "http://127.0.0.1:8080/img/a.jpg", host: "127.0.0.1"))
    }

    @Test(arguments: [
        ("Location: /a\r\n", "/a"),
        ("location:/a\r\n", "/a"),
        ("LOCATION: \t /a b \t\r\n", "/a b"),
        ("Location: /a\rjunk\r\n", "/a"),
        ("Location: /a \u{0}junk\r\n", "/a "),
        ("Location: \r\n", ""),
    ])
    func locationValuesAreTakenAsLibcurlTakesThem(_ line: String, _ value: String) {
        #expect(RedirectTarget.locationValue(ofHeaderLine: Array(line.utf8)) == Array(value.utf8))
    }

    @Test func otherLinesAreNotLocations() {
        for line in ["Location : /a\r\n", "Content-Location: /a\r\n", "Locations: /a\r\n", "X: Location: /a\r\n", "Locatio\r\n"] {
            #expect(RedirectTarget.locationValue(ofHeaderLine: Array(line.utf8)) == nil, "\(line.debugDescription)")
        }
        // Bytes that are not UTF-8 reach the parser as they are.
        #expect(RedirectTarget.locationValue(ofHeaderLine: Array("Location: /".utf8) + [0xFF] + Array("\r\n".utf8)) == [0x2F, 0xFF])
    }

    /// The header callback's bookkeeping: which `Location` libcurl follows
    /// (the first non-empty one of a 3xx, while redirects are left), and the
    /// URL a relative one resolves against on the next hop.
    @Test func theStateFollowsTheLocationLibcurlFollows() {
        func feed(_ state: TransferState, _ lines: [String]) -> Bool {
            lines.allSatisfy { line in Array(line.utf8).withUnsafeBufferPointer { state.receiveHeader($0) } }
        }
        let sources = SourcePolicy(patterns: [HostPattern("127.0.0.1")!])
        let state = TransferState(url: Self.base, maxBody: 1000, policy: AddressPolicy(), sources: sources, maxRedirects: 5)
        #expect(feed(state, ["HTTP/1.1 302 Found\r\n", "Location:\r\n", "Location: /x/y\r\n", "Location: http://b.test/\r\n", "\r\n"]))
        #expect(feed(state, ["HTTP/1.1 301 Moved\r\n", "Location: z\r\n", "\r\n"]))
        #expect(state.currentURL == "http://127.0.0.1:8080/x/y", "the second Location of a response is not followed")
        #expect(feed(state, ["HTTP/1.1 200 OK\r\n", "Location: http://b.test/\r\n", "\r\n"]), "not a redirect")
        #expect(state.currentURL == "http://127.0.0.1:8080/x/z")
        #expect(state.headers["location"] == "http://b.test/")
        // Trailers are not the head.
        #expect(feed(state, ["HTTP/1.1 302 Found\r\n", "Content-Length: 0\r\n", "\r\n", "Location: http://b.test/\r\n"]))

        let refused = TransferState(url: Self.base, maxBody: 1000, policy: AddressPolicy(), sources: sources, maxRedirects: 5)
        #expect(!feed(refused, ["HTTP/1.1 302 Found\r\n", "Location: //b.test/\r\n"]))
        #expect(refused.blockedSource == "b.test")
        let broken = TransferState(url: Self.base, maxBody: 1000, policy: AddressPolicy(), sources: SourcePolicy(), maxRedirects: 5)
        #expect(!feed(broken, ["HTTP/1.1 302 Found\r\n", "Location: http://[::1/\r\n"]))
        #expect(broken.unfollowableRedirect?.location == "http://[::1/")
        // Without redirects to follow, libcurl reads no Location: nothing to refuse.
        let none = TransferState(url: Self.base, maxBody: 1000, policy: AddressPolicy(), sources: sources, maxRedirects: 0)
        #expect(feed(none, ["HTTP/1.1 302 Found\r\n", "Location: http://[::1/\r\n", "\r\n"]))
    }

    @Test func hostPatternsMatchEverySpellingOfAnAddress() {
        let policy = SourcePolicy(patterns: [HostPattern("[::1]")!, HostPattern("127.0.0.1")!, HostPattern("*.example.com")!])
        for host in ["[::1]", "[0:0::1]", "127.0.0.1", "A.Example.COM.", "b.example.com"] {
            #expect(policy.allows(libcurlHost: host), "\(host)")
        }
        for host in ["[::2]", "example.com", "x|.example.com", "bücher.example.com", "localhost", ""] {
            #expect(!policy.allows(libcurlHost: host), "\(host)")
        }
        #expect(policy.allows(host: "::1") && HostPattern("::1")!.matches(host: "0:0::1"))
        #expect(SourcePolicy().allows(libcurlHost: "x|.anything"), "no list: any host")
    }
}
