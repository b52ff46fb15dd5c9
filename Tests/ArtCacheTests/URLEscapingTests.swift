@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCacheStore
import Foundation
import Testing

/// Issue 36, item 4: URLs are kept as given. Only characters a URL may not
/// hold are escaped; escapes already in it are kept (and normalized by the
/// usual rule), never escaped again. Known answers: input → normalized URL
/// → key (SHA-256 of the normalized URL, `printf %s URL | sha256sum`).
@Suite("URL escapes kept as given", .timeLimit(.minutes(3)))
struct URLEscapingTests {
    /// URLs that were right before: their keys were computed with the code
    /// before this change and must not move (they name stored rows and blobs).
    @Test(arguments: [
        ("http://host/q?id=[x]", "http://host/q?id=%5Bx%5D",
         "537fdb29990f07b02304f18d41f67c4e0239779a4ce91aca735a0801e96bfe53"),
        ("http://host/a b.png", "http://host/a%20b.png", "180403883d7763e3e31b05709c381fea9a6232720bb2b2c595cf159318d0c089"),
        ("http://host/a%20b.png", "http://host/a%20b.png", "180403883d7763e3e31b05709c381fea9a6232720bb2b2c595cf159318d0c089"),
        ("http://host/a|b.png", "http://host/a%7Cb.png", "46cfee3b44543924e35f0a5de1b660c0496ac21a57568924f27cda564c0edd07"),
        ("http://host/a\\b.png", "http://host/a%5Cb.png", "177af9fcb2fdf65b9be1c0f0ebd9e71bfb532100dd86195fc085d274a965a690"),
        ("http://host/100%", "http://host/100%25", "8152c5a6f7cc3e2c6100577ad2b5d8022437c332ac4bc5e9f5ffe6ed06d76fe8"),
        ("http://host/%zz", "http://host/%25zz", "924e218d0bec861e844654b3d234b5d8a226e6342bb302c105e3278021cf2884"),
        ("http://host/%4", "http://host/%254", "73dbc4f705d8e0cc33be6e9da744941dd7d992caa3b28462604660fd70d4060c"),
        ("http://host/50%25.png", "http://host/50%25.png", "fe8560d3207b4dc5bac728fca6c7aea0afb191543f1f39bbe79fb468c333924e"),
        ("http://host/caf\u{E9}.png", "http://host/caf%C3%A9.png",
         "e4b82bc24434d32f711d5daa14700742eb7af23005c04b67e6f3379b42a980e3"),
        ("http://host/q?x=\u{FC}", "http://host/q?x=%C3%BC", "1448066bf234cfb89616e407ac879f706cecadbecd5da6b45bbf639e7e88d0ed"),
        ("http://[::1]:8080/q?id=[x]", "http://[::1]:8080/q?id=%5Bx%5D",
         "70e9a64cd216566ee8c3954ed28bd3b61200886e5ead8599c83ad00dfb3cc51e"),
        ("http://host/a{b}^`\"<>.png", "http://host/a%7Bb%7D%5E%60%22%3C%3E.png",
         "656a74838d7473821dfc2bc595df6d86bb58db02f39e8ca68fae00f9f06d9751"),
        ("http://host/it's+(1)!*,;=$&.png?a=b:c@d/e?f", "http://host/it's+(1)!*,;=$&.png?a=b:c@d/e?f",
         "18035d7cc795ef5a4fddfba8752ffa328a1ae645631438bd6382335087c1fb6d"),
        ("http://host/it's (1).png", "http://host/it's%20(1).png",
         "cacc281ec49f7154f3b15c9c3eead1de3de61aebae365e7887867e7e1c400432"),
        ("http://host/a%41.png#frag ment", "http://host/aA.png", "eea68650576862c06a8c998a070c5a3d6b91ab08a1b078d302add864bc667487"),
        ("http://host/a\u{7F}b.png", "http://host/a%7Fb.png", "9c5f29392db284565e260aba0532dd010625077c9c78f0edf64bedf38ae2d9aa"),
        ("http://host/a\tb.png", "http://host/a%09b.png", "fce9ce7d60e9c712f51b9ec4eb12cbfe68d2b35706644727c4d120adf4ca58b1"),
        ("https://example.com/a%2fb%3a.png?q=%7e%3d", "https://example.com/a%2Fb%3A.png?q=~%3D",
         "6ade4cbd0def6e7b76d040179629205c4e81f5fd124dd927f1c9a809c471d782"),
        ("http://host/a%2Fb.png?x=%7E%41", "http://host/a%2Fb.png?x=~A",
         "88cf07b8c493377a44642e9ba28c07e7d1aa296509d462972e2665417de353ad"),
        ("http://host/a%2e%2E/b%41.png", "http://host/a../bA.png", "2e4b7c84ef4e1af1b993c05174fd14e896c740da46e33640e4bd289d2fb3a2bf"),
    ])
    func keysOfURLsThatWereRightDoNotMove(_ input: String, _ normalized: String, _ key: String) throws {
        let url = try NormalizedURL(input)
        #expect(url.string == normalized)
        #expect(url.key.hex == key)
        #expect(try NormalizedURL(url.string) == url, "normalizing is idempotent")
    }

    /// URLs whose escapes were escaped again (`%41` → `%2541`) when they also
    /// held a character that must be escaped: each was fetched as, and stored
    /// under, another URL. The comment gives the wrong spelling of before.
    @Test(arguments: [
        ("http://host/q?x=%41%2F&id=[x]", "http://host/q?x=A%2F&id=%5Bx%5D",  // q?x=%2541%252F&id=%5Bx%5D
         "e0e81be56011dd4ba764ba429f546a65dc776296a34c7c365b63259fc4fc66b5"),
        ("http://host/a%2Fb c.png", "http://host/a%2Fb%20c.png",  // a%252Fb%20c.png
         "988d799758bcdafacf89ccf7e806813400229ccbf2977790787b6a7659c73959"),
        ("http://host/a|b%7C.png", "http://host/a%7Cb%7C.png",  // a%7Cb%257C.png
         "9f9e606590e8d44592737a598707185b087d202d7841ea176c3dbaab472e3c4c"),
        ("http://host/a\\b%5C.png", "http://host/a%5Cb%5C.png",  // a%5Cb%255C.png
         "49dc990ad19bb7420c05070fe93b9d3cccf58530d661ac6b579375468b286ca6"),
        ("http://host/100%/a%2F?p=%zz", "http://host/100%25/a%2F?p=%25zz",  // 100%25/a%252F?p=%25zz
         "4810e8f0065c8d20fb2f34b8c678a93b76f9abdc9b74162ca764304ad2485f03"),
        ("http://host/caf\u{E9}%2F.png?q=\u{FC}%20", "http://host/caf%C3%A9%2F.png?q=%C3%BC%20",  // %252F, %2520
         "aee781b1eff555186a3f6ce9f8ddb4a5b320d5df46f40bf00aa9a18bc6818401"),
        ("http://[::1]:8080/q?x=%41&id=[x]", "http://[::1]:8080/q?x=A&id=%5Bx%5D",  // q?x=%2541&id=%5Bx%5D
         "9ee05539ded25b0e645b98bdd141a48d5acaaed3de73f8243fcb7c92cc5c9930"),
        ("http://[2001:DB8::1]/q?id=[x]&y=%7e|", "http://[2001:db8::1]/q?id=%5Bx%5D&y=~%7C",
         "cb79441c3c51a7b31a3761f2cce9e6f0c021bb42b722ccba34f3431b625d079b"),
        ("http://host/a{b}%2f.png", "http://host/a%7Bb%7D%2F.png",  // a%7Bb%7D%252f.png
         "1777ec1fd170c4e1f7f1fb11402a661cde6616542f560384fa861f26f17945aa"),
        ("http://host/a%2e%2E/b c.png", "http://host/a../b%20c.png",  // a%252e%252E/b%20c.png
         "2f684c730202e7341eb536cfd8cb2993e7f170a169a66b90745be3648f1824b1"),
    ])
    func escapesAreNotEscapedAgain(_ input: String, _ normalized: String, _ key: String) throws {
        let url = try NormalizedURL(input)
        #expect(url.string == normalized)
        #expect(url.key.hex == key)
        #expect(try NormalizedURL(url.string) == url, "normalizing is idempotent")
        #expect(try NormalizedURL(normalized).key.hex == key, "the escaped spelling shares the key")
    }

    /// Only the path and query are escaped: an authority holding what a
    /// host or port may not is refused, not escaped into another host.
    @Test(arguments: ["http://host\\a.png", "http://exa mple.com/a.png", "http://host:80 /a.png", "http://ho|st/a.png",
                      "http://[::1%zz]/a.png"])
    func badAuthoritiesAreRefused(_ input: String) {
        let error = #expect(throws: ArtCacheError.self) { try NormalizedURL(input) }
        #expect(error?.code == .invalidURL)
    }

    /// The origin receives the path and query as given (not `%252F` nor
    /// `%2541`), and the original is stored under the key of that URL.
    @Test func theOriginIsAskedForThePathAsGiven() async throws {
        let h = try await LoopbackHarness()
        // Served only at `/img/a%2Fb.png`: a path escaped again (`a%252Fb.png`) is a 404.
        h.origin.register("a%2Fb.png", .init(body: try Fixtures.image(suffix: ".png"), contentType: "image/png"))
        let given = h.url("/img/a%2Fb.png?x=%41%2F&id=[x]")
        let outcome = try await h.pipeline.original(given)
        #expect(h.origin.requestTargets == ["/img/a%2Fb.png?x=A%2F&id=%5Bx%5D"])
        let normalized = h.url("/img/a%2Fb.png?x=A%2F&id=%5Bx%5D")
        #expect(outcome.entry?.url == normalized)
        #expect(outcome.entry?.key == CacheKey.sha256Hex(Data(normalized.utf8)))
        #expect(try await h.store.entry(forURL: given)?.key == outcome.entry?.key)
        try await h.pipeline.close()
    }
}
