@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

// Inputs found by the libFuzzer targets in Fuzz/ (their reproducers are
// seeds in Fuzz/regressions/<target>/), each pinned by a test.

private func be32(_ value: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }

@Suite("Fuzz regressions")
struct FuzzRegressionTests {}

extension FuzzRegressionTests {
    @Suite("Image headers")
    struct ImageHeaders {
        /// A PNG whose IHDR declares 4294967295 × 4294967295 pixels.
        static let hugePNG = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be32(13) + Array("IHDR".utf8)
                                  + be32(.max) + be32(.max) + [8, 6, 0, 0, 0] + be32(0))

        /// A HEIC with two `ispe` properties, the second 4294967295 × 4294967295
        /// (fuzz-sniffer: comparing their areas overflowed).
        static let hugeHEIC: Data = {
            let ftyp = be32(24) + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)
            func ispe(_ width: UInt32, _ height: UInt32) -> [UInt8] {
                be32(20) + Array("ispe".utf8) + [0, 0, 0, 0] + be32(width) + be32(height)
            }
            return Data(ftyp + ispe(4000, 3000) + ispe(.max, .max))
        }()

        @Test("32-bit sides are capped, so width × height fits in an Int")
        func extentsDoNotOverflow() throws {
            let png = try #require(Sniffer.extent(Self.hugePNG, format: .png))
            #expect(png.width == Sniffer.maxReportedSide && png.height == Sniffer.maxReportedSide)
            #expect(!png.width.multipliedReportingOverflow(by: png.height).overflow)

            #expect(Sniffer.sniff(Self.hugeHEIC).format == .heic)
            let heic = try #require(Sniffer.heifExtent(Self.hugeHEIC))
            #expect(heic.width == Sniffer.maxReportedSide && heic.height == Sniffer.maxReportedSide)
            #expect(!heic.width.multipliedReportingOverflow(by: heic.height).overflow)

            // Sides that fit are reported as they are.
            let small = Data(Self.hugePNG.prefix(16) + be32(640) + be32(480) + Self.hugePNG.dropFirst(24))
            #expect(Sniffer.extent(small, format: .png).map { [$0.width, $0.height] } == [640, 480])
        }

        @Test("The renderer refuses them as too large (it multiplied the sides and trapped)")
        func rendererRefusesHugeHeaders() throws {
            let renderer = Renderer(settings: ThumbnailSettings())
            for data in [Self.hugePNG, Self.hugeHEIC] {
                let error = #expect(throws: RenderError.self) {
                    try renderer.renderBlocking(data, specs: [VariantSpec(width: 10, height: 10)])
                }
                #expect(error?.code == .tooLarge)
            }
        }
    }

    @Suite("HTTP caching headers")
    struct HTTPHeaders {
        static let now = Date(timeIntervalSince1970: 1_700_000_000)

        @Test("A max-age that is not delta-seconds makes the response stale, never an infinite date",
              arguments: ["max-age=1e400", "max-age=inf", "max-age=nan", "max-age=-1", "max-age=1.5", "max-age=0x10",
                          "max-age=+5", "max-age=", "max-age=\"inf\""])
        func invalidMaxAge(_ cacheControl: String) {
            let headers = ["cache-control": cacheControl, "expires": "Sun Nov  6 08:49:37 1994"]
            let policy = HTTPCachePolicy(headers: headers, now: Self.now)
            #expect(policy.expiresAt == Self.now)
            #expect(policy.lifetime == 0)
            #expect(policy.isExplicit)
        }

        @Test("delta-seconds: digits, optionally quoted, capped at 2^31")
        func validMaxAge() {
            let policy = { (value: String) in HTTPCachePolicy(headers: ["cache-control": value], now: Self.now) }
            #expect(policy("max-age=3600").lifetime == 3600)
            #expect(policy("public, max-age=\"60\"").lifetime == 60)
            #expect(policy("max-age=0").lifetime == 0)
            #expect(policy("max-age=99999999999999999999999999").lifetime == 2_147_483_648)
            #expect(policy("max-age=99999999999999999999999999").expiresAt?.timeIntervalSince1970.isFinite == true)
        }

        @Test("HTTP dates: the three forms parse; non-ASCII and trailing text are refused (DateFormatter leaked on them; HTTPDate reads bytes now)")
        func httpDates() {
            for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
                #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == 784_111_777, "\(text)")
            }
            for text in ["Sun, 06 Nov 1994 08:49:37 GMT\u{1D11E}", "Sun, 06 Nov 1994 08:49:\u{1D11E}", "\u{1D11E}",
                         "Sun, 06 Nov 1994 08:49:37 GMT\u{0}", String(repeating: "Sun, 06 Nov 1994 08:49:37 GMT ", count: 4)] {
                #expect(HTTPDate.parse(text) == nil, "\(text.debugDescription)")
            }
            let policy = HTTPCachePolicy(headers: ["expires": "Sun, 06 Nov 1994 08:49:\u{1D11E}"], now: Self.now)
            #expect(policy.expiresAt == Self.now)  // unparseable Expires: already expired
        }

        @Test("Retry-After: delay-seconds or an HTTP date; anything else is no Retry-After")
        func retryAfter() {
            #expect(HTTPCachePolicy.retryAfter("120", now: Self.now) == 120)
            #expect(HTTPCachePolicy.retryAfter(" 7 ", now: Self.now) == 7)
            #expect(HTTPCachePolicy.retryAfter("99999999999999999999999999", now: Self.now) == 2_147_483_648)
            let date = HTTPDate.format(Self.now.addingTimeInterval(90))
            #expect(HTTPCachePolicy.retryAfter(date, now: Self.now) == 90)
            for value in ["inf", "nan", "1e400", "-5", "3.5", "0x10", "+1"] {
                #expect(HTTPCachePolicy.retryAfter(value, now: Self.now) == nil, "\(value)")
            }
        }
    }

    @Suite("URLs and configuration")
    struct URLsAndConfiguration {
        /// fuzz-url: Foundation re-spelled hosts (xn-- ↔ Unicode), so a
        /// normalized URL could be refused when normalized again.
        @Test("Normalizing is idempotent; hosts are taken as written, punycode kept, raw Unicode refused",
              arguments: ["http://xn--bcher-kva.example/a.png", "http://xn--bcher-kv%61.example/", "http://a%62%63.example/x",
                          "http://EXAMPLE.com./a/../b.png?", "http://[0:0::1]:8080/x"])
        func idempotent(_ input: String) throws {
            let once = try NormalizedURL(input)
            #expect(try NormalizedURL(once.string) == once)
            #expect(!once.host.isEmpty)
        }

        @Test func unicodeHostsAreRefusedNotRespelled() throws {
            for input in ["http://a%62\u{e9}/", "http://b\u{fc}cher.example/", "http://%C3%A9.example/"] {
                let error = #expect(throws: ArtCacheError.self) { try NormalizedURL(input) }
                #expect(error?.code == .invalidURL, "\(input)")
            }
            #expect(try NormalizedURL("http://xn--bcher-kva.example/").host == "xn--bcher-kva.example")
            // fuzz-url: the host was looked for at a later `://` (in the path or query).
            let error = #expect(throws: ArtCacheError.self) { try NormalizedURL("http:x/[::f1]:8/p?u=http://evil.example/") }
            #expect(error?.code == .invalidURL)
        }

        /// fuzz-url: a colon followed by a combining mark is one Character
        /// that is not ":", so the host was looked for at a later `://`; and
        /// inet_pton read an IPv6 host only up to a NUL (`[::\0 0]` became `[::]`).
        @Test func delimitersAreFoundByteByByte() throws {
            for input in ["https:\u{31A}bhttp://[::\u{0}0]:6553\u{1}6/1", "http://[::1\u{0}ff]/", "http://a.example@\u{31A}b.example/",
                          "http://[::1]:8080\u{31A}/x"] {
                let error = #expect(throws: ArtCacheError.self) { try NormalizedURL(input) }
                #expect(error?.code == .invalidURL, "\(input)")
            }
            #expect(IPAddress("127.0.0.1\u{0}.example") == nil)
            #expect(IPAddress("::\u{0}0") == nil)
            #expect(IPAddress("::") != nil)
        }

        /// fuzz-config: toml++ aborted the process on these table headers.
        @Test("Table headers toml++ would abort on are a syntax error",
              arguments: ["[.]", "[~]", "[ #]", "[[\u{e9}]]", "[   ", "  [\t.x]", "[\u{31F}", "[[\u{31F}a]]", "[ \u{301}a]"])
        func badTableHeader(_ toml: String) {
            let error = #expect(throws: ConfigError.self) { try Configuration.parse(toml: toml, source: "fuzz.conf") }
            #expect(error?.code == .syntax)
        }

        /// fuzz-config: toml++ asserted `!is_value_terminator(*cp)` (an abort;
        /// undefined behaviour in release builds) on a `}` where an array
        /// expects a value. Reproducer: Fuzz/regressions/fuzz-config/array-closing-brace.toml.
        @Test("A '}' where an array expects a value is a syntax error",
              arguments: ["a = [}", "[thumbnails]\nsizes = [}}}\u{FFFD}fit=cower\"", "a = [ # c\n\n  }", "a = [1, }", "a = [[1],\n}",
                          "a = { b = [\t} }", #"a = ["x", '''y''', """z\n""""", }"#])
        func closingBraceInArray(_ toml: String) {
            let error = #expect(throws: ConfigError.self) { try Configuration.parse(toml: toml, source: "fuzz.conf") }
            #expect(error?.code == .syntax, "\(toml.debugDescription)")
            #expect(error?.message.contains("saw '}'") == true, "\(error?.message ?? "")")
        }

        @Test("The scan skips strings and comments: '[}' and ',}' inside them are read as written")
        func bracesInStringsAndComments() throws {
            let toml = #"""
                # a = [}
                [download]
                allowed_sources = ["[}", ',}', """x\"""[}""", '''[
                }''', "\"", ] # [, }
                """#
            let values = try Configuration.parse(toml: toml, source: "ok.conf")
            #expect(values["download.allowed_sources"] == .list(["[}", ",}", #"x"""[}"#, "[\n}", "\""]))
        }

        @Test("Units never return infinity")
        func finiteUnits() {
            let huge = "1" + String(repeating: "0", count: 305)
            #expect(Units.parseDuration(huge + "w") == nil)
            #expect(Units.parseSize(huge + "TiB") == nil)
            #expect(Units.parseDuration("2w") == 1_209_600)
        }
    }
}
