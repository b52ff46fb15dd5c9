import Testing
@testable import ArtCacheCore
@testable import ArtCacheRender

/// The on-disk key format: known answers. Keys name every row and blob of
/// every cache; a change of format would orphan them all, and comparing keys
/// with each other would not notice. The expected hex digits are SHA-256 of
/// the normalized URL (`printf %s URL | sha256sum`), and of
/// `variant:<parent key>:<canonical spec>` for a variant.
@Suite("Cache keys (known answers)")
struct CacheKeyTests {
    @Test(arguments: [
        ("https://is1-ssl.mzstatic.com/image/thumb/Music/v4/a.jpg/100x100bb.jpg",
         "2c40e9902357e0b1f0b80411916459d0598688746d6937ef8e280524c4fff9c1"),
        ("https://avatars.githubusercontent.com/u/583231?v=4",
         "c33e7f487441116b549ed408a5f5332ea2ad7b3b57fa0e5c983f516872ca458b"),
        ("http://127.0.0.1:8080/a.png", "a69c7652e1c5320443df689784610f1e03a9884289850f0532615958c8636680"),
        ("https://pbs.twimg.com/profile_images/1/x_normal.jpg",
         "57b0e43e3328d13275be30aa2af3def848c829d31b8c304115b7d10568af0c54"),
    ])
    func originalKeys(url: String, hex: String) throws {
        #expect(try NormalizedURL(url).key.hex == hex)
    }

    /// Spellings of one resource share its key; others do not.
    @Test func spellingsThatNormalizeTogetherShareTheKey() throws {
        let key = "2c40e9902357e0b1f0b80411916459d0598688746d6937ef8e280524c4fff9c1"
        for spelling in ["HTTPS://IS1-SSL.MZSTATIC.COM:443/image/thumb/Music/v4/a.jpg/100x100bb.jpg#frag",
                         "https://is1-ssl.mzstatic.com./image/thumb/Music/v4/./a.jpg/100x100bb.jpg",
                         "https://is1-ssl.mzstatic.com/image/thumb/Music/v4/x/../a.jpg/100x100bb.jpg?",
                         "https://is1-ssl.mzstatic.com/image/thumb/Music/v4/%61.jpg/100x100bb.jpg"] {
            #expect(try NormalizedURL(spelling).key.hex == key, "\(spelling)")
        }
        #expect(try NormalizedURL("http://2130706433:8080/a.png").key.hex
                == "a69c7652e1c5320443df689784610f1e03a9884289850f0532615958c8636680")
        for other in ["http://is1-ssl.mzstatic.com/image/thumb/Music/v4/a.jpg/100x100bb.jpg",  // scheme
                      "https://is1-ssl.mzstatic.com/image/thumb/Music/v4/a.jpg/100x100BB.jpg",  // path case
                      "https://is1-ssl.mzstatic.com/image/thumb/Music/v4/a.jpg/100x100bb.jpg?x=1"] {
            #expect(try NormalizedURL(other).key.hex != key, "\(other)")
        }
    }

    @Test func variantKeys() throws {
        let parent = try NormalizedURL("https://avatars.githubusercontent.com/u/583231?v=4").key
        let spec = VariantSpec(width: 100, height: 100).canonical
        #expect(spec == "100x100,contain,auto,q80,bgffffff")
        #expect(CacheKey(parent: parent, spec: spec).hex == "0d35a7b8818a9bcc2cd3518770263f32ebb5cae611935e3c8e11b574d06e3720")
    }
}
