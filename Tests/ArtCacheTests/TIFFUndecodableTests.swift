@testable import ArtCacheCore
import ArtCacheFixtures
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// A valid TIFF in a variant libvips has no reader for (12-bit samples,
/// tiled separate planes, a compression its libtiff lacks, ...) is
/// `unsupported`, not "corrupt or truncated" (`decode`) (issue 36, item 6).
/// The TIFFs are written byte by byte (`TIFFBuilder`): libvips cannot write
/// these variants.
@Suite("TIFF variants libvips cannot read", .timeLimit(.minutes(3)))
struct TIFFUndecodableTests {
    let renderer = Renderer(settings: Fixtures.thumbnails { _ in })
    static let spec = VariantSpec(width: 8, height: 8, format: .png)

    static let undecodable: [(String, TIFFBuilder, String)] = [
        ("tiled separate planes", .image(planar: 2, tiled: true), "tiled images with separate colour planes"),
        ("12-bit grey", .image(samples: 1, bits: 12, photometric: 1), "12-bit samples"),
        ("12-bit RGB", .image(bits: 12), "12-bit samples"),
        ("10-bit grey", .image(samples: 1, bits: 10, photometric: 1), "10-bit samples"),
        ("24-bit grey", .image(samples: 1, bits: 24, photometric: 1), "24-bit samples"),
        ("4-bit RGB", .image(bits: 4), "4-bit samples with 3 per pixel"),
        ("4-bit grey and alpha", .image(samples: 2, bits: 4, photometric: 1, extra: [(338, .shorts([2]))]),
         "4-bit grey with 2 samples"),
        ("16-bit float", .image(samples: 1, bits: 16, photometric: 1, sampleFormat: 3), "16-bit floating-point"),
        ("64-bit float", .image(samples: 1, bits: 64, photometric: 1, sampleFormat: 3), "64-bit samples"),
        ("complex", .image(samples: 1, bits: 32, photometric: 1, sampleFormat: 5), "complex samples"),
        ("subsampled YCbCr, no JPEG", .image(photometric: 6), "chroma-subsampled YCbCr"),
        ("JPEG 2000 compression", .image(compression: 34712), "compression JPEG 2000 (34712) is not in this build's libtiff"),
        ("JPEG XL compression", .image(compression: 50002), "compression JPEG XL (50002)"),
        ("old-style JPEG", ojpeg(Data([0xFF, 0xD8, 0xFF, 0xD9])), "old-style JPEG compression (6)"),
    ]

    /// An old-style JPEG TIFF: one strip that is a whole JPEG stream, named
    /// by `JPEGInterchangeFormat` too (the form libtiff decodes best).
    static func ojpeg(_ jpeg: Data) -> TIFFBuilder {
        var tiff = TIFFBuilder()
        for (tag, value) in [(256, 16), (257, 8), (259, 6), (262, 6), (277, 3), (278, 8), (284, 1)] { tiff.set(tag, .shorts([value])) }
        tiff.set(258, .shorts([8, 8, 8]))
        tiff.blob("jpeg", jpeg)
        tiff.set(273, .offsets(["jpeg"]))
        tiff.set(279, .longs([jpeg.count]))
        tiff.set(513, .offsets(["jpeg"]))
        tiff.set(514, .longs([jpeg.count]))
        return tiff
    }

    @Test(arguments: undecodable.indices)
    func aValidVariantLibvipsCannotReadIsUnsupported(_ index: Int) async throws {
        let (name, tiff, why) = Self.undecodable[index]
        let data = tiff.build()
        #expect(Sniffer.sniff(data).format == .tiff, "\(name)")
        #expect(TIFFDirectory(data) != nil, "\(name): its directory reads")
        do {
            _ = try await renderer.render(data, spec: Self.spec)
            Issue.record("\(name) was rendered")
        } catch let error as RenderError {
            #expect(error.code == .unsupported, "\(name): \(error)")
            #expect(error.message.contains("TIFF: \(why)"), "\(name): \(error.message)")
            #expect(ArtCacheError(error).code == .unsupported)
        }
        // The header read (info, limits) refuses it the same way.
        #expect(throws: RenderError.self) { try renderer.header(of: data) }
    }

    /// Variants that are as unusual but that libvips reads: the check
    /// refuses none of them, and each renders.
    static func decodable() throws -> [(String, Data)] {
        var planar = TIFFBuilder.image(planar: 2)
        planar.bigEndian = true
        var big = TIFFBuilder.image()
        big.bigTIFF = true
        return [
            ("8-bit RGB", TIFFBuilder.image().build()),
            ("separate planes in strips, big-endian", planar.build()),
            ("tiled, contiguous", TIFFBuilder.image(tiled: true).build()),
            ("BigTIFF", big.build()),
            ("4-bit grey", TIFFBuilder.image(samples: 1, bits: 4, photometric: 1).build()),
            ("4-bit palette", TIFFBuilder.image(samples: 1, bits: 4, photometric: 3,
                                                extra: [(320, .shorts((0..<48).map { $0 * 1365 }))]).build()),
            ("YCbCr, not subsampled", TIFFBuilder.image(photometric: 6, extra: [(530, .shorts([1, 1]))]).build()),
            ("16-bit signed grey", TIFFBuilder.image(samples: 1, bits: 16, photometric: 1, sampleFormat: 2).build()),
        ]
    }

    @Test func variantsLibvipsReadsAreRendered() async throws {
        for (name, data) in try Self.decodable() {
            let directory = try #require(TIFFDirectory(data), "\(name)")
            #expect(directory.undecodable(codecConfigured: Renderer.tiffCodecConfigured) == nil, "\(name)")
            let rendered = try await renderer.render(data, spec: Self.spec)
            #expect((rendered.width, rendered.height) == (8, 4), "\(name)")
        }
    }

    /// A TIFF whose fields are fine but whose strip is missing is still
    /// corrupt (`decode`): the check names variants, not damage.
    @Test func aTruncatedTIFFIsStillADecodeError() async throws {
        var tiff = TIFFBuilder.image()
        tiff.entries.removeAll { $0.tag == 273 }
        tiff.set(273, .longs([1_000_000]))
        let data = tiff.build()
        #expect(TIFFDirectory(data)?.undecodable(codecConfigured: { _ in true }) == nil)
        let error = await #expect(throws: RenderError.self) { _ = try await renderer.render(data, spec: Self.spec) }
        #expect(error?.code == .decode, "\(String(describing: error))")
    }

    /// Known answers of the directory reader: both byte orders, BigTIFF,
    /// values in the entry and at an offset; nil for what is not a directory.
    @Test func theDirectoryReaderKnowsItsFields() throws {
        var expected = TIFFDirectory()
        (expected.width, expected.height, expected.bitsPerSample, expected.samplesPerPixel) = (16, 8, 12, 3)
        (expected.photometric, expected.planarConfiguration) = (2, 1)
        for (bigEndian, bigTIFF) in [(false, false), (true, false), (false, true), (true, true)] {
            var tiff = TIFFBuilder.image(bits: 12)  // three BitsPerSample values: at an offset in classic TIFF
            (tiff.bigEndian, tiff.bigTIFF) = (bigEndian, bigTIFF)
            #expect(TIFFDirectory(tiff.build()) == expected, "big-endian \(bigEndian), BigTIFF \(bigTIFF)")
        }
        var tiled = TIFFBuilder.image(samples: 1, bits: 16, photometric: 1, sampleFormat: 2, planar: 2, tiled: true,
                                      extra: [(530, .shorts([1, 2]))])
        tiled.bigEndian = true
        let directory = try #require(TIFFDirectory(tiled.build()))
        #expect(directory.tiled && directory.planarConfiguration == 2 && directory.sampleFormat == 2)
        #expect(directory.yCbCrSubsampling == (1, 2) && directory.samplesPerPixel == 1 && directory.bitsPerSample == 16)

        let good = TIFFBuilder.image().build()
        #expect(TIFFDirectory(good.prefix(7)) == nil)                          // no header
        #expect(TIFFDirectory(good.prefix(good.count - 20)) == nil)            // the directory cut
        #expect(TIFFDirectory(Data("II*\0".utf8) + Data([0xFF, 0xFF, 0xFF, 0x7F])) == nil)  // offset past the end
        #expect(TIFFDirectory(Data("II*\0".utf8) + Data([8, 0, 0, 0, 0, 0])) == nil)         // no entries
        #expect(TIFFDirectory(Data("MM\0+".utf8) + Data([0, 8, 0, 0]) + Data(repeating: 0xFF, count: 8)) == nil)
        var noWidth = TIFFBuilder.image()
        noWidth.entries.removeAll { $0.tag == 256 }
        #expect(TIFFDirectory(noWidth.build()) == nil)
    }

    /// Through the pipeline: the error a caller gets is `unsupported`, and
    /// the original is not remembered as "not an image" but kept.
    @Test func thePipelineSaysUnsupported() async throws {
        let h = try await LoopbackHarness { $0.download.retries = 0 }
        defer { h.origin.stop() }
        h.origin.register("planar.tif", .init(body: TIFFBuilder.image(planar: 2, tiled: true).build(),
                                              contentType: "image/tiff", cacheControl: "max-age=3600"))
        do {
            _ = try await h.pipeline.image(ImageRequest(url: h.url("/img/planar.tif"), size: ImageRequest.Size(width: 8, height: 8)))
            Issue.record("a tiled planar TIFF was rendered")
        } catch {
            #expect(error.code == .unsupported, "\(error)")
            #expect("\(error)".contains("separate colour planes"), "\(error)")
        }
        let key = try NormalizedURL(h.url("/img/planar.tif")).key
        #expect(try await h.store.negatives.answer(forKey: key) == nil)
        // The original is kept and served as it is.
        let original = try await h.pipeline.image(ImageRequest(url: h.url("/img/planar.tif")))
        #expect(original.data == TIFFBuilder.image(planar: 2, tiled: true).build())
        #expect(h.origin.requestCount("/img/planar.tif") == 1)
        try await h.pipeline.close()
    }
}
