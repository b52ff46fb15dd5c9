import Foundation
import Testing
@testable import ArtCacheFetch

/// Provider profiles as a table: URL in, output size asked for, URL to fetch
/// out (with its rendition size). Pure functions: no request is sent.
@Suite("Provider profiles")
struct ProviderProfileTests {
    static func profile(_ name: String) -> ProviderProfile { ProviderProfile.builtIn.first { $0.name == name }! }

    /// (url, pixels, expected url, expected size; nil url: the profile does not read it)
    typealias Row = (String, Int, String?, Int?)

    func check(_ name: String, _ rows: [Row], sourceLocation: SourceLocation = #_sourceLocation) {
        let profile = Self.profile(name)
        for (url, pixels, expected, size) in rows {
            let rendition = profile.rendition(of: url, pixels: pixels)
            #expect(rendition?.url == expected, "\(name): \(url) at \(pixels)", sourceLocation: sourceLocation)
            if expected != nil { #expect(rendition?.size == size, "\(name): \(url) at \(pixels) size", sourceLocation: sourceLocation) }
        }
    }

    @Test func itunesAnySizeTheAspectKeptNeverSmallerThanGiven() {
        let base = "https://is1-ssl.mzstatic.com/image/thumb/Music115/v4/ab/cd/ef/abcdef/source/"
        check("itunes", [
            (base + "100x100bb.jpg", 300, base + "300x300bb.jpg", 300),
            (base + "100x100bb.jpg", 600, base + "600x600bb.jpg", 600),
            (base + "100x100bb.jpg", 50, base + "100x100bb.jpg", 100),  // never below the URL given
            (base + "60x60bb.jpg", 100, base + "100x100bb.jpg", 100),   // artworkUrl60
            (base + "30x30bb.jpg", 30, base + "30x30bb.jpg", 30),
            (base + "100x100bb.jpg", 9000, base + "3000x3000bb.jpg", 3000),  // max
            (base + "200x100bb.png", 400, base + "400x200bb.png", 400),  // aspect kept
            (base + "100x100bb-60.jpg", 200, base + "200x200bb-60.jpg", 200),
            ("https://a1.mzstatic.com/us/r30/Purple/v4/x/y/mzl.abc.png", 300, nil, nil),  // no size in it
            ("https://example.com/image/100x100bb.jpg", 300, nil, nil),  // another host
            ("http://IS2-SSL.mzstatic.com:8443/a/100x100bb.jpg", 300, "http://IS2-SSL.mzstatic.com:8443/a/300x300bb.jpg", 300),
        ])
    }

    @Test func twitterLadderUpToTheOriginal() {
        let base = "https://pbs.twimg.com/profile_images/1234567890/AbCdEf"
        check("twitter", [
            (base + "_normal.jpg", 48, base + "_normal.jpg", 48),
            (base + "_normal.jpg", 96, base + "_400x400.jpg", 400),  // 48 px avatar on a 2x screen
            (base + "_normal.jpg", 60, base + "_bigger.jpg", 73),
            (base + "_mini.png", 20, base + "_mini.png", 24),
            (base + "_normal.jpg", 500, base + ".jpg", nil),  // the original
            (base + "_bigger.jpeg", 10, base + "_bigger.jpeg", 73),  // never below the URL given
            (base + ".jpg", 48, base + ".jpg", nil),  // already the original
            ("https://pbs.twimg.com/media/Abc_normal.jpg", 400, nil, nil),  // not a profile image
            ("https://pbs.twimg.com/profile_images/1/x_normal", 96, "https://pbs.twimg.com/profile_images/1/x_400x400", 400),
        ])
    }

    @Test func githubQueryKeepsTheRest() {
        check("github", [
            // avatar_url names no size (the origin gives 460): asked at the size the output needs.
            ("https://avatars.githubusercontent.com/u/583231?v=4", 96, "https://avatars.githubusercontent.com/u/583231?v=4&s=96", 96),
            ("https://avatars.githubusercontent.com/u/583231?v=4", 64, "https://avatars.githubusercontent.com/u/583231?v=4&s=64", 64),
            ("https://avatars.githubusercontent.com/u/583231?v=4", 460, "https://avatars.githubusercontent.com/u/583231?v=4", 460),
            ("https://avatars.githubusercontent.com/u/583231?v=4", 2000, "https://avatars.githubusercontent.com/u/583231?v=4", 460),
            ("https://avatars.githubusercontent.com/u/583231?v=4", 0, "https://avatars.githubusercontent.com/u/583231?v=4", 460),
            ("https://avatars.githubusercontent.com/u/583231?v=4&s=48", 96, "https://avatars.githubusercontent.com/u/583231?v=4&s=96", 96),
            ("https://avatars.githubusercontent.com/u/583231?s=48&v=4", 96, "https://avatars.githubusercontent.com/u/583231?v=4&s=96", 96),
            ("https://avatars.githubusercontent.com/u/1?s=40", 2000, "https://avatars.githubusercontent.com/u/1?s=460", 460),
            ("https://avatars.githubusercontent.com/u/1?s=120", 60, "https://avatars.githubusercontent.com/u/1?s=120", 120),
            ("https://avatars.githubusercontent.com/u/1?s=big", 60, nil, nil),
        ])
    }

    @Test func gravatarDefaultsTo80() {
        let hash = "https://www.gravatar.com/avatar/205e460b479e2e5b48aec07710c08d50"
        check("gravatar", [
            (hash, 80, hash, 80),
            (hash, 160, hash + "?s=160", 160),
            (hash, 40, hash + "?s=40", 40),  // no s=: the size the output needs
            (hash + "?s=32&d=identicon", 64, hash + "?d=identicon&s=64", 64),
            ("https://secure.gravatar.com/avatar/abc?s=10", 5000, "https://secure.gravatar.com/avatar/abc?s=2048", 2048),
            ("https://gravatar.com/userimage/1/abc.jpg", 100, nil, nil),
        ])
    }

    @Test func aUsersOwnProfileParsesAndBadLinesAreTypedErrors() throws {
        let mine = try ProviderProfile(name: "cdn", text: "hosts=img.example.org,*.cdn.example.org path=/art/ size=query:w:100 max=800")
        #expect(mine.rendition(of: "https://a.cdn.example.org/art/1.jpg", pixels: 300)?.url == "https://a.cdn.example.org/art/1.jpg?w=300")
        #expect(mine.rendition(of: "https://img.example.org/other/1.jpg", pixels: 300) == nil)
        for bad in ["size=dimensions", "hosts=a.example", "hosts=* size=dimensions", "hosts=a.example size=pixels",
                    "hosts=a.example size=suffixes:_b=73,_a=48", "hosts=a.example size=dimensions max=0",
                    "hosts=a.example size=dimensions colour=red", "hosts=a.example size=query:", "nonsense"] {
            #expect(throws: ProviderProfile.Invalid.self, "\(bad)") { try ProviderProfile(name: "bad", text: bad) }
        }
    }
}
