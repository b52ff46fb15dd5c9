@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

@Suite("Rendering with libvips", .timeLimit(.minutes(3)))
struct RenderTests {
    static let renderer: Renderer = {
        var settings = Configuration.defaults.thumbnails
        settings.maxSourcePixels = 50_000_000
        return Renderer(settings: settings)
    }()

    func render(_ data: Data, _ size: String, fit: VariantSpec.Fit = .contain, format: VariantSpec.Format = .auto) async throws -> RenderedImage {
        try await Self.renderer.render(data, spec: try #require(VariantSpec(size: size, fit: fit, format: format)))
    }

    @Test(arguments: [".jpg", ".png", ".gif", ".webp", ".tif"], [VariantSpec.Format.jpeg, .webp, .png])
    func everySourceToEveryFormat(_ source: String, _ format: VariantSpec.Format) async throws {
        let input = try Fixtures.image(width: 120, height: 90, suffix: source)
        let output = try await render(input, "60x60", format: format)
        let sniffed = Sniffer.sniff(output.data).format
        #expect(sniffed.rawValue == format.rawValue)
        #expect(output.width == 60 && output.height == 45)
        let header = try #require(Fixtures.header(output.data))
        #expect(header.width == 60 && header.height == 45)
    }

    /// AVIF is written by the package's own libheif + libaom encoder
    /// (CHeifAOM), not by whatever AV1 encoder Debian's libheif has: always there.
    @Test func avifIsAlwaysWritten() async throws {
        let input = try Fixtures.image(width: 120, height: 90, suffix: ".jpg")
        let output = try await render(input, "60x60", format: .avif)
        #expect(Sniffer.sniff(output.data).format == .avif)
        #expect(output.width == 60 && output.height == 45)
    }

    @Test func containAndCoverDimensions() async throws {
        let input = try Fixtures.image(width: 400, height: 200, suffix: ".jpg")
        let contain = try await render(input, "100x100", fit: .contain)
        #expect((contain.width, contain.height) == (100, 50))
        let cover = try await render(input, "100x100", fit: .cover)
        #expect((cover.width, cover.height) == (100, 100))
        let smart = try await render(input, "80x120", fit: .smart)
        #expect((smart.width, smart.height) == (80, 120))
        let small = try Fixtures.image(width: 40, height: 30, suffix: ".png")
        let notEnlarged = try await render(small, "300x300")
        #expect((notEnlarged.width, notEnlarged.height) == (40, 30))
    }

    @Test(arguments: 1...8)
    func exifOrientationIsApplied(_ orientation: Int) async throws {
        let input = try Fixtures.orientedJPEG(width: 80, height: 40, orientation: orientation)
        #expect(Fixtures.header(input)?.orientation == orientation)
        let output = try await render(input, "200x200")
        let rotated = orientation >= 5  // 5...8 swap width and height
        #expect((output.width, output.height) == (rotated ? (40, 80) : (80, 40)))
        let header = try #require(Fixtures.header(output.data))
        #expect(header.orientation == 1)
        #expect(!header.hasEXIF)  // metadata stripped
    }

    /// Several sizes from one decode match separate renders, fits and
    /// orientation included, and take one place in the render pool.
    @Test(arguments: [1, 6])
    func severalSizesFromOneDecode(_ orientation: Int) async throws {
        let input = try Fixtures.orientedJPEG(width: 600, height: 400, orientation: orientation)
        let specs = try ["300x300", "100x100", "64x64"].enumerated().map { index, size in
            try #require(VariantSpec(size: size, fit: index == 2 ? .cover : .contain, format: index == 1 ? .webp : .jpeg))
        }
        let renderer = Renderer(settings: ThumbnailSettings())
        let together = try await renderer.render(input, specs: specs)
        #expect(renderer.activity.started == 1)
        for (spec, image) in zip(specs, together) {
            let alone = try await renderer.render(input, spec: spec)
            #expect((image.width, image.height) == (alone.width, alone.height), "\(spec.canonical)")
            #expect(image.format == alone.format)
            let header = try #require(Fixtures.header(image.data))
            #expect((header.width, header.height) == (image.width, image.height))
        }
        let upright = orientation >= 5 ? (200, 300) : (300, 200)
        #expect((together[0].width, together[0].height) == upright)
        #expect((together[2].width, together[2].height) == (64, 64))
        // A corrupt source fails every size with the decode's typed error.
        let cut = input.prefix(input.count / 3)
        let error = await #expect(throws: RenderError.self) { try await renderer.render(cut, specs: specs) }
        #expect(error?.code == .decode)
    }

    @Test func metadataIsStripped() async throws {
        let input = try Fixtures.cmykJPEG(withProfile: true)
        #expect(Fixtures.header(input)?.hasICCProfile == true)
        let output = try await render(input, "32x32", format: .jpeg)
        let header = try #require(Fixtures.header(output.data))
        #expect(!header.hasEXIF)
        #expect(!header.hasICCProfile)
    }

    @Test(arguments: [true, false])
    func cmykBecomesSRGB(_ withProfile: Bool) async throws {
        let input = try Fixtures.cmykJPEG(withProfile: withProfile)
        #expect(Fixtures.header(input)?.bands == 4)
        for format in [VariantSpec.Format.jpeg, .png, .webp] {
            let output = try await render(input, "32x32", format: format)
            let header = try #require(Fixtures.header(output.data))
            #expect(header.bands == 3, "\(format)")
            #expect(header.isSRGB, "\(format)")
        }
    }

    @Test func alphaIsFlattenedForJPEGAndKeptOtherwise() async throws {
        let input = try Fixtures.image(width: 50, height: 50, bands: 4, suffix: ".png")
        let jpeg = try await render(input, "40x40", format: .jpeg)
        #expect(!jpeg.hasAlpha)
        #expect(Fixtures.header(jpeg.data)?.bands == 3)
        let auto = try await render(input, "40x40", format: .auto)
        #expect(auto.format == .png)
        #expect(Fixtures.header(auto.data)?.hasAlpha == true)
        let opaque = try await render(try Fixtures.image(suffix: ".png"), "40x40", format: .auto)
        #expect(opaque.format == .jpeg)
        let webp = try await render(input, "40x40", format: .webp)
        #expect(Fixtures.header(webp.data)?.hasAlpha == true)
    }

    /// libvips 8.14's webpsave writes a VP8X header and an EXIF chunk even
    /// with `strip` (~200 bytes of a 100 px thumbnail): the libvips path
    /// sends libwebp's simple format, as the fast path does, and keeps VP8X
    /// only for what needs it (alpha here), without the EXIF (issue 51).
    @Test func libvipsWebPCarriesNoMetadata() async throws {
        func chunks(_ data: Data) -> [String] {
            var names: [String] = [], k = 12
            let bytes = [UInt8](data)
            while k + 8 <= bytes.count {
                names.append(String(decoding: bytes[k..<k + 4], as: UTF8.self))
                let size = Int(bytes[k + 4]) | Int(bytes[k + 5]) << 8 | Int(bytes[k + 6]) << 16 | Int(bytes[k + 7]) << 24
                k += 8 + size + (size & 1)
            }
            #expect(k == bytes.count, "the chunks fill the file")
            #expect(Int(bytes[4]) | Int(bytes[5]) << 8 | Int(bytes[6]) << 16 | Int(bytes[7]) << 24 == bytes.count - 8, "RIFF size")
            return names
        }
        let opaque = try await render(try Fixtures.image(width: 120, height: 90, suffix: ".png"), "60x60", format: .webp)
        #expect(chunks(opaque.data) == ["VP8 "])
        let header = try #require(Fixtures.header(opaque.data))
        #expect(header.width == 60 && header.height == 45)
        let alpha = try await render(try Fixtures.image(width: 50, height: 50, bands: 4, suffix: ".png"), "40x40", format: .webp)
        #expect(chunks(alpha.data) == ["VP8X", "ALPH", "VP8 "])
        #expect(Fixtures.header(alpha.data)?.hasAlpha == true)
    }

    @Test func animatedGIFGivesItsFirstFrame() async throws {
        let input = try Fixtures.animatedGIF(width: 40, height: 30, frames: 4)
        #expect(Sniffer.sniff(input).isAnimated)
        let output = try await render(input, "100x100")
        #expect((output.width, output.height) == (40, 30))
        #expect(Fixtures.header(output.data)?.frames == 1)
    }

    @Test func bombsAreRejectedFromTheHeader() async throws {
        let bomb = Fixtures.pngBomb(width: 100_000, height: 100_000)
        let error = await #expect(throws: RenderError.self) { try await render(bomb, "100x100") }
        #expect(error?.code == .tooLarge)
        #expect(error?.message.contains("pixels") == true)
        // Past max_frames an animation is no error (issue 52): its first frame.
        var tight = Configuration.defaults.thumbnails
        tight.maxFrames = 3
        let frames = try Renderer(settings: tight).renderBlocking(try Fixtures.animatedGIF(width: 10, height: 10, frames: 5),
                                                                  specs: [VariantSpec(width: 10, height: 10, format: .webp)])
        #expect(frames[0].frames == 1 && frames[0].still == .frames)
        let output = await #expect(throws: RenderError.self) {
            try Renderer(settings: Fixtures.thumbnails { $0.maxOutput = 4096 })
                .renderBlocking(try Fixtures.image(suffix: ".png"), specs: [VariantSpec(width: 5000, height: 10)])
        }
        #expect(output?.code == .tooLarge)
    }

    @Test func unsupportedAndCorruptInputsGetTypedErrors() async throws {
        let pdf = Data("%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n".utf8)
        #expect((await #expect(throws: RenderError.self) { try await render(pdf, "10x10") })?.code == .unsupported)
        let svg = Data(#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#.utf8)
        #expect((await #expect(throws: RenderError.self) { try await render(svg, "10x10") })?.code == .unsupported)
        let jxl = try Fixtures.image(suffix: ".jxl")
        #expect((await #expect(throws: RenderError.self) { try await render(jxl, "10x10") })?.code == .unsupported)
        let html = Data("<html>nope</html>".utf8)
        #expect((await #expect(throws: RenderError.self) { try await render(html, "10x10") })?.code == .unsupported)
        // A truncated body is refused, not rendered half grey.
        let png = try Fixtures.image(width: 200, height: 200, suffix: ".png")
        let truncated = await #expect(throws: RenderError.self) { try await render(png.prefix(png.count / 3), "50x50") }
        #expect(truncated?.code == .decode)
        let jpeg = try Fixtures.image(width: 200, height: 200, suffix: ".jpg")
        let cut = await #expect(throws: RenderError.self) { try await render(jpeg.prefix(jpeg.count / 2), "50x50") }
        #expect(cut?.code == .decode)
        // A header with no usable image data behind it fails typed.
        let hollow = Fixtures.pngBomb(width: 64, height: 64)
        let broken = await #expect(throws: RenderError.self) { try await render(hollow, "50x50") }
        #expect(broken?.code == .decode)
    }

    @Test func specCanonicalStrings() throws {
        let spec = try #require(VariantSpec(size: "100X100", fit: .cover, format: .webp, quality: 70, background: [0, 128, 255]))
        #expect(spec.canonical == "100x100,cover,webp,q70,bg0080ff")
        #expect(VariantSpec(size: "100") == nil)
        #expect(VariantSpec(size: "0x10") == nil)
        #expect(VariantSpec(size: "10x10", quality: 101) == nil)
    }

    @Test func manyRendersAtOnceDoNotCrash() async throws {
        let inputs = try [".jpg", ".png", ".webp", ".gif", ".tif"].map { try Fixtures.image(width: 300, height: 200, suffix: $0) }
        for _ in 0..<3 {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<40 {
                    group.addTask { try await self.render(inputs[i % inputs.count], "\(20 + i)x\(20 + i)").width }
                }
                for try await width in group { #expect(width > 0) }
            }
        }
    }

    /// libvips' error buffer is one per process: parallel renders overwrite
    /// each other's text. Each render's code must come from its own result.
    @Test func parallelFailuresKeepTheirOwnCodes() async throws {
        let valid = try Fixtures.image(width: 300, height: 200, suffix: ".jpg")
        let corrupt = valid.prefix(valid.count / 2)
        let bomb = Fixtures.pngBomb(width: 20_000, height: 20_000)
        let bmp = try Fixtures.image(suffix: "magick:bmp")
        let garbagePNG = Fixtures.pngLike(size: 4000)
        let renderer = Renderer(settings: Fixtures.thumbnails {
            $0.maxSourcePixels = 10_000_000
            $0.concurrency = 2
        })
        let cases: [(Data, RenderError.Code?)] = [(valid, nil), (corrupt, .decode), (bomb, .tooLarge), (bmp, .unsupported),
                                                  (garbagePNG, .decode)]
        try await withThrowingTaskGroup(of: (Int, RenderError.Code?).self) { group in
            for i in 0..<60 {
                group.addTask {
                    do {
                        _ = try await renderer.render(cases[i % cases.count].0, spec: VariantSpec(width: 64, height: 64))
                        return (i % cases.count, nil)
                    } catch let error as RenderError {
                        return (i % cases.count, error.code)
                    }
                }
            }
            for try await (index, code) in group {
                #expect(code == cases[index].1, "case \(index)")
            }
        }
    }
}

@Suite("Variants through the pipeline", .timeLimit(.minutes(3)))
struct VariantPipelineTests {
    @Test func variantDownloadsItsOriginalAndRendersOnce() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        origin.register("a.jpg", .init(body: try Fixtures.image(width: 400, height: 300, suffix: ".jpg"), contentType: "image/jpeg"))
        let pipeline = try await Fixtures.pipeline(dir.path)
        let store = pipeline.store
        let url = origin.url("/gate/a.jpg")
        let spec = VariantSpec(width: 100, height: 100)
        // The origin holds the one download until all six callers have
        // joined the one render: they overlap however the machine runs.
        let outcomes = try await withThrowingTaskGroup(of: VariantOutcome.self) { group in
            for _ in 0..<6 { group.addTask { try await pipeline.variant(url, spec: spec) } }
            await origin.waitForRequest("/gate/a.jpg")
            await pipeline.variants.joins.waitInTest { $0 >= 6 }
            #expect(pipeline.variants.inFlight == 1 && pipeline.originals.inFlight == 1)
            origin.openGate()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0.width == 100 && $0.height == 75 })
        // All six have the render's own outcome: none read it back from the cache.
        #expect(outcomes.allSatisfy { $0.rendered && $0.source == .network })
        #expect(pipeline.renderer.activity.started == 1)
        #expect(origin.requestCount("/gate/a.jpg") == 1)
        let stats = try await store.stats()
        #expect(stats.originals == 1 && stats.variants == 1)
        let again = try await pipeline.variant(url, spec: spec)
        #expect(!again.rendered && again.source == .disk)  // from the cache
        let original = try #require(try await store.entry(forURL: url))
        let variants = try await store.variants(of: original.cacheKey)
        #expect(variants.map(\.spec) == [spec.canonical])
        #expect(variants.first?.width == 100)
    }

    @Test func prefetchRendersConfiguredSizes() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        for i in 0..<6 {
            origin.register("\(i).jpg", .init(body: try Fixtures.image(width: 320 + i, height: 240, suffix: ".jpg"), contentType: "image/jpeg"))
        }
        origin.register("bomb.png", .init(body: Fixtures.pngBomb(width: 90_000, height: 90_000), contentType: "image/png"))
        let pipeline = try await Fixtures.pipeline(dir.path)
        let store = pipeline.store
        let urls = (0..<6).map { origin.url("/img/\($0).jpg") } + [origin.url("/img/bomb.png")]
        let specs = [VariantSpec(width: 100, height: 100), VariantSpec(width: 50, height: 50, fit: .cover, format: .webp)]
        let (summary, _) = await pipeline.prefetch(urls, concurrency: 4, variants: specs)
        #expect(summary.downloaded == 7)
        #expect(summary.variants == 12)
        #expect(summary.renderFailures == ["render_too_large": 2])
        let stats = try await store.stats()
        #expect(stats.variants == 12)
        let (again, _) = await pipeline.prefetch(urls, concurrency: 4, variants: specs)
        #expect(again.cached == 7 && again.variants == 0)
    }
}

/// An original's dimensions are read by libvips on a render thread (where
/// libvips runs, by priority), and a cancelled request stays cancelled:
/// `try?` used to turn the cancellation into a 0x0 answer.
@Suite("Original dimensions", .timeLimit(.minutes(3)))
struct DimensionsTests {
    @Test func readOnARenderThreadAndCancellationIsNotSwallowed() async throws {
        let h = try await LoopbackHarness()
        let jpeg = try Fixtures.image(width: 120, height: 90, suffix: ".jpg")
        let before = h.pipeline.renderer.activity.started
        #expect(try await h.pipeline.originals.dimensions(of: jpeg, priority: PriorityHandle(.normal)) == (120, 90))
        #expect(h.pipeline.renderer.activity.started == before + 1)
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await h.pipeline.originals.dimensions(of: jpeg, priority: PriorityHandle(.normal))
        }
        await #expect(throws: CancellationError.self) { _ = try await cancelled.value }
        try await h.pipeline.close()
    }
}
