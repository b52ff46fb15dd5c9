@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// Sniffing real encoder output: every format is made by libvips here.
@Suite("Sniffing libvips-encoded images", .timeLimit(.minutes(3)))
struct SniffRealBytesTests {
    @Test(arguments: [
        (".jpg[Q=80]", SniffedFormat.jpeg), (".png", .png), (".gif", .gif), (".webp[Q=70]", .webp),
        (".webp[lossless]", .webp), (".tif", .tiff), (".tif[compression=jpeg]", .tiff), (".jxl", .jxl),
        ("magick:bmp", .bmp), ("magick:ico", .ico),
    ])
    func encodedImage(_ suffix: String, _ expected: SniffedFormat) throws {
        let data = try Fixtures.image(width: 40, height: 30, suffix: suffix)
        let result = Sniffer.sniff(data)
        #expect(result.format == expected)
        #expect(result.format.isImage)
        #expect(!result.isAnimated)
    }

    @Test func rgbaPNG() throws {
        #expect(Sniffer.sniff(try Fixtures.image(bands: 4, suffix: ".png")).format == .png)
    }

    /// HEIF containers: HEIC (HEVC) and AVIF (AV1), when this libvips can encode them.
    @Test(arguments: [(".heic[compression=hevc]", SniffedFormat.heic), (".avif", .avif), (".heif[compression=av1]", .avif)])
    func heifFamily(_ suffix: String, _ expected: SniffedFormat) throws {
        guard let data = try? Fixtures.image(width: 64, height: 64, suffix: suffix) else {
            // Debian's libheif may lack an encoder; the hand-made brand tests cover the sniffing.
            return
        }
        #expect(Sniffer.sniff(data).format == expected)
    }

    @Test func svgAndSvgz() async throws {
        let svg = Data(#"<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>"#.utf8)
        #expect(Sniffer.sniff(svg).format == .svg)
        let dir = TempDir()
        let path = dir.file("a.svg")
        try svg.write(to: URL(fileURLWithPath: path))
        #expect(try await CLI.run(["-k", path], executable: "/bin/gzip").status == 0)
        let svgz = try Data(contentsOf: URL(fileURLWithPath: path + ".gz"))
        let result = Sniffer.sniff(svgz)
        #expect(result.format == .svg)
        #expect(result.isCompressedSVG)
    }

    @Test func nonImages() {
        #expect(Sniffer.sniff(Data()).format == .empty)
        #expect(Sniffer.sniff(Data("<html><head><title>404 Not Found</title></head></html>".utf8)).format == .html)
        #expect(Sniffer.sniff(Data(#"{"message":"Not Found"}"#.utf8)).format == .json)
        #expect(Sniffer.sniff(Data("<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code></Error>".utf8)).format == .xml)
        #expect(Sniffer.sniff(Data("Service temporarily unavailable\n".utf8)).format == .text)
        #expect(Sniffer.sniff(Data("%PDF-1.4\n%âãÏÓ\n".utf8)).format == .pdf)
    }
}
