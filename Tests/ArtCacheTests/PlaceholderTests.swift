import ArtCacheFixtures
import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheRender

@Suite("Placeholders: dominant colour, ThumbHash, PNG data URL")
struct PlaceholderTests {
    /// `count` pixels of one colour.
    static func pixels(_ rgba: [UInt8], _ count: Int) -> [UInt8] { Array([[UInt8]](repeating: rgba, count: count).joined()) }

    @Test func theDominantColourIsTheLargestBucketNotTheMean() {
        // 3/4 red and 1/4 blue: red (the mean would be a purple).
        let image = Self.pixels([250, 10, 10, 255], 48) + Self.pixels([10, 10, 250, 255], 16)
        #expect(Placeholder.hex(Placeholder.dominantColor(rgba: image)) == "#fa0a0a")
        // Within a bucket the colour is the bucket's mean (rounded).
        let close = Self.pixels([16, 32, 48, 255], 3) + Self.pixels([17, 33, 49, 255], 1)
        #expect(Placeholder.hex(Placeholder.dominantColor(rgba: close)) == "#102030")
    }

    @Test func transparentPixelsDoNotCountUnlessNothingIsOpaque() {
        // Mostly transparent black around an opaque green patch: green.
        let image = Self.pixels([0, 0, 0, 0], 60) + Self.pixels([20, 200, 20, 255], 4)
        #expect(Placeholder.hex(Placeholder.dominantColor(rgba: image)) == "#14c814")
        // Nothing opaque: every pixel counts.
        #expect(Placeholder.hex(Placeholder.dominantColor(rgba: Self.pixels([90, 80, 70, 10], 4))) == "#5a5046")
        #expect(Placeholder.hex(Placeholder.dominantColor(rgba: [])) == "#000000")
    }

    @Test func thePlaceholderIsAPNGOfTheDecodedHashThatLibvipsReads() throws {
        let rgba = ThumbHashTests.image("checker", 40, 20)
        let placeholder = try Placeholder(width: 40, height: 20, rgba: rgba)
        #expect(placeholder.thumbHashBase64 == Data(try ThumbHash.encode(width: 40, height: 20, rgba: rgba)).base64EncodedString())
        let url = try placeholder.dataURL()
        #expect(url.hasPrefix("data:image/png;base64,"))
        let png = try #require(Data(base64Encoded: String(url.dropFirst("data:image/png;base64,".count))))
        // Decoded by libvips: the hash's 32×18 RGBA image.
        let header = try Renderer(settings: ThumbnailSettings()).header(of: png)
        #expect(header.width == 32 && header.height == 18 && header.hasAlpha)
        #expect(png.count < 2000, "a placeholder is small: \(png.count) bytes")
    }
}

@Suite("Placeholders from encoded images (libvips)")
struct RenderedPlaceholderTests {
    let renderer = Renderer(settings: ThumbnailSettings())

    @Test func aSolidImageGivesItsColourAndItsAspectRatio() throws {
        let red = try renderer.solidImage(width: 200, height: 100, rgb: [200, 30, 40], format: .png, quality: 90).data
        let placeholder = try renderer.placeholderBlocking(red)
        #expect(placeholder.color == "#c81e28")
        let decoded = try ThumbHash.decode(placeholder.thumbHash)
        // Landscape, at ThumbHash's approximate ratio (7 by 4 luminance terms for 2:1).
        #expect(decoded.width == 32 && decoded.height == 18, "\(decoded.width)x\(decoded.height)")
        // Flat: every decoded pixel close to the colour.
        for i in stride(from: 0, to: decoded.rgba.count, by: 4) {
            #expect(abs(Int(decoded.rgba[i]) - 200) <= 12 && abs(Int(decoded.rgba[i + 1]) - 30) <= 12
                    && abs(Int(decoded.rgba[i + 2]) - 40) <= 12 && decoded.rgba[i + 3] == 255)
        }
    }

    @Test func aJPEGOfTheCorpusShapeHasAPlaceholder() async throws {
        let jpeg = try renderer.solidImage(width: 600, height: 600, rgb: [10, 120, 220], format: .jpeg, quality: 90).data
        let placeholder = try await renderer.placeholder(of: jpeg, priority: PriorityHandle(.normal))
        #expect(placeholder.color.hasPrefix("#") && placeholder.color.count == 7)
        #expect(placeholder.thumbHash.count >= 5)
        #expect(try placeholder.dataURL().hasPrefix("data:image/png;base64,"))
    }

    @Test func bytesThatAreNoImageAreATypedError() {
        #expect(throws: RenderError.self) { try renderer.placeholderBlocking(Data("not an image".utf8)) }
    }

    /// A JPEG's placeholder at the codec's speed (a 1/8 libjpeg-turbo decode)
    /// is libvips' placeholder: the same shape (orientation applied), the
    /// same colour within a few levels, hashes that decode to nearly the
    /// same image.
    @Test func theFastJPEGPlaceholderIsLibvipsPlaceholder() throws {
        let vips = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = false })
        let fast = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = true })
        let cases = [("zone plate 600x600", try SyntheticImage.zonePlateJPEG()),
                     ("600x300, orientation 6", try SyntheticImage.orientedJPEG(width: 600, height: 300, orientation: 6)),
                     ("640x356", try Fixtures.image(width: 640, height: 356, suffix: ".jpg[Q=90]"))]
        for (name, jpeg) in cases {
            let pixels = try JPEGFastPath.placeholderPixels(jpeg, maxSourcePixels: 100_000_000, deadline: .now + .seconds(10))
            #expect(pixels != nil, "\(name): the fast path decoded it")
            let (a, b) = (try fast.placeholderBlocking(jpeg), try vips.placeholderBlocking(jpeg))
            let (x, y) = (try ThumbHash.decode(a.thumbHash), try ThumbHash.decode(b.thumbHash))
            #expect((x.width, x.height) == (y.width, y.height), "\(name): shape")
            let channels = { (hex: String) in stride(from: 1, to: 7, by: 2).map { Int(hex.dropFirst($0).prefix(2), radix: 16)! } }
            #expect(zip(channels(a.color), channels(b.color)).allSatisfy { abs($0 - $1) <= 8 }, "\(name): \(a.color) vs \(b.color)")
            guard x.rgba.count == y.rgba.count else { continue }
            let mean = Double(zip(x.rgba, y.rgba).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(x.rgba.count)
            #expect(mean <= 4, "\(name): decoded hashes differ by \(mean)")
        }
    }
}
