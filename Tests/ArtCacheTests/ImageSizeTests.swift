@testable import ArtCacheRender
@testable import ArtCacheServiceGrammar
import ArtCacheCore
import Foundation
import Testing
@testable import artcache

/// One parser of `WIDTHxHEIGHT` (issue 37: four with different rules
/// before; the public `ImageSize("0x-5")` took a zero and a negative side).
@Suite("Sizes: one parser")
struct ImageSizeTests {
    @Test(arguments: [
        ("100x100", ImageSize?(ImageSize(width: 100, height: 100))), ("64X48", ImageSize(width: 64, height: 48)),
        ("1x10000", ImageSize(width: 1, height: 10_000)), ("007x8", ImageSize(width: 7, height: 8)),
        ("0x-5", nil), ("0x5", nil), ("5x0", nil), ("-5x5", nil), ("+5x5", nil), ("5x+5", nil), ("10001x1", nil),
        ("5x5x5", nil), ("x5", nil), ("5x", nil), ("", nil), (" 5x5", nil), ("5x5 ", nil), ("５x5", nil),
        ("99999999999999999999x1", nil), ("5x5X5", nil), ("5*5", nil),
    ] as [(String, ImageSize?)])
    func knownAnswers(_ text: String, _ expected: ImageSize?) {
        #expect(ImageSize(text) == expected, "\(text)")
        // Every reader of sizes agrees.
        #expect(VariantSpec(size: text).map { ImageSize(width: $0.width, height: $0.height) } == expected, "\(text)")
        #expect((try? ManifestCommand.sizes(text, default: [])) == expected.map { [$0] }, "\(text)")
        let option = try? ThumbnailOptions(parsing: text)
        #expect(option?.size == (text.contains("X") ? nil : expected), "\(text): service paths take the lower-case x only")
    }
}
