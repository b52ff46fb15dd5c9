import ArtCacheFixtures
import CTurboJPEG
import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheRender

/// The fast path's planes path (`JPEGFastPath+Planes.swift`): 4:2:0 AVIFs
/// of YCbCr JPEGs made from the JPEG's own planes. Taken only where it can
/// be; its outputs are libvips' sizes and colours for every subsampling it
/// takes and every EXIF orientation, and its placeholder is the RGB steps'.
@Suite("Planes path", .timeLimit(.minutes(3)))
struct PlanesPathTests {
    let vips = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = false })
    static let far = ContinuousClock.now.advanced(by: .seconds(60))

    /// A coloured test card (four flat quadrants and a diagonal ramp), RGB.
    static func card(width: Int, height: Int) -> PixelBuffer {
        var pixels = PixelBuffer(width: width, height: height, channels: 3)
        let colours: [[UInt8]] = [[200, 40, 90], [20, 180, 60], [250, 230, 40], [30, 60, 200]]
        for y in 0..<height {
            for x in 0..<width {
                let quadrant = colours[(y < height / 2 ? 0 : 2) + (x < width / 2 ? 0 : 1)]
                let ramp = UInt8((x + y) * 60 / (width + height))
                for c in 0..<3 { pixels.bytes[(y * width + x) * 3 + c] = quadrant[c] &- (c == 1 ? ramp : 0) }
            }
        }
        return pixels
    }

    /// `pixels` as a baseline JPEG with this chroma subsampling (TurboJPEG),
    /// and an EXIF orientation (an APP1 segment after SOI) when not 1.
    static func jpeg(_ pixels: PixelBuffer, subsampling: TJSAMP, quality: Int = 92, orientation: Int = 1) throws -> Data {
        guard let handle = tjInitCompress() else { throw TurboJPEGError(message: "no compressor") }
        defer { tjDestroy(handle) }
        var output: UnsafeMutablePointer<UInt8>?
        var length: UInt = 0
        let status = pixels.bytes.withUnsafeBufferPointer {
            tjCompress2(handle, $0.baseAddress, Int32(pixels.width), Int32(pixels.rowBytes), Int32(pixels.height),
                        Int32(TJPF_RGB.rawValue), &output, &length, Int32(subsampling.rawValue), Int32(quality), 0)
        }
        defer { if let output { tjFree(output) } }
        guard status == 0, let output else { throw TurboJPEGError(message: "tjCompress2 failed") }
        var jpeg = Data(bytes: output, count: Int(length))
        if orientation != 1 {
            // Exif, II TIFF, IFD0 with one entry: Orientation (0x0112), SHORT, 1.
            let tiff: [UInt8] = Array("II".utf8) + [42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0,
                                                     UInt8(orientation), 0, 0, 0, 0, 0, 0, 0]
            let body: [UInt8] = Array("Exif".utf8) + [0, 0] + tiff
            let segment: [UInt8] = [0xFF, 0xE1, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
            jpeg.insert(contentsOf: segment, at: 2)
        }
        return jpeg
    }

    static func plan(_ jpeg: Data, _ specs: [VariantSpec]) throws -> JPEGFastPath {
        try #require(JPEGFastPath.plan(jpeg, specs: specs, maxSourcePixels: 1 << 26))
    }

    static func outputs(_ specs: [VariantSpec]) -> [JPEGFastPath.Output] {
        JPEGFastPath.outputs(specs, encoding: RenderPlan.encoderSetting)
    }

    @Test func takenOnlyForAVIFsBelowQuality90OfYCbCrJPEGs() throws {
        let card = try Self.jpeg(Self.card(width: 120, height: 90), subsampling: TJSAMP_420)
        let avif = VariantSpec(width: 60, height: 60, format: .avif, quality: 60)
        let factor = (num: 1, denom: 1)
        #expect(try Self.plan(card, [avif]).takesPlanes(Self.outputs([avif]), factor: factor, placeholder: true))
        // Another format among the outputs, or 4:4:4 AVIF (quality 90 and up): the RGB steps.
        let webp = VariantSpec(width: 60, height: 60, format: .webp, quality: 60)
        #expect(try !Self.plan(card, [avif, webp]).takesPlanes(Self.outputs([avif, webp]), factor: factor, placeholder: false))
        let high = VariantSpec(width: 60, height: 60, format: .avif, quality: 90)
        #expect(try !Self.plan(card, [high]).takesPlanes(Self.outputs([high]), factor: factor, placeholder: false))
        // Grey, and 4:1:1 (chroma a quarter wide: the resampler would have to enlarge it).
        let grey = try Self.jpeg(Self.card(width: 120, height: 90), subsampling: TJSAMP_GRAY)
        #expect(try !Self.plan(grey, [avif]).takesPlanes(Self.outputs([avif]), factor: factor, placeholder: false))
        let quarter = try Self.jpeg(Self.card(width: 120, height: 90), subsampling: TJSAMP_411)
        #expect(try !Self.plan(quarter, [avif]).takesPlanes(Self.outputs([avif]), factor: factor, placeholder: false))
        // A decode whose chroma is smaller than half an output (8x8 at 1/8 of 4:2:0 64x64 → 4x4 chroma for 8x8).
        let tiny = try Self.jpeg(Self.card(width: 64, height: 64), subsampling: TJSAMP_420)
        let small = VariantSpec(width: 8, height: 8, format: .avif, quality: 60)
        #expect(try Self.plan(tiny, [small]).takesPlanes(Self.outputs([small]), factor: (1, 8), placeholder: false))
        #expect(try !Self.plan(tiny, [small]).takesPlanes(Self.outputs([small]), factor: (1, 8), placeholder: true),
                "the placeholder's 8x8 needs 8x8 chroma")
    }

    /// Every subsampling the path takes, every orientation, contain and an
    /// odd cover crop: libvips' sizes, and its colours within 4/255.
    @Test(arguments: [TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440])
    func sizesAndColoursAreLibvips(subsampling: TJSAMP) async throws {
        for orientation in 1...8 {
            let jpeg = try Self.jpeg(Self.card(width: 160, height: 100), subsampling: subsampling, orientation: orientation)
            for spec in [VariantSpec(width: 60, height: 60, format: .avif, quality: 85),
                         VariantSpec(width: 45, height: 31, fit: .cover, format: .avif, quality: 85)] {
                let plan = try Self.plan(jpeg, [spec])
                #expect(plan.takesPlanes(Self.outputs([spec]), factor: plan.decodeFactor, placeholder: false))
                let rendered = try #require(try plan.render(jpeg, deadline: Self.far)?.first)
                let reference = try await vips.render(jpeg, spec: spec)
                let what = "\(subsampling) orientation \(orientation) \(spec.canonical)"
                #expect((rendered.width, rendered.height) == (reference.width, reference.height), "\(what)")
                #expect(rendered.format == .avif && Sniffer.sniff(rendered.data).format == .avif, "\(what)")
                let difference = try SyntheticImage.pixels(rendered.data).meanDifference(try SyntheticImage.pixels(reference.data))
                #expect(try #require(difference, "\(what): the same size") <= 4, "\(what)")
            }
        }
    }

    /// The placeholder's pixels from the planes are the RGB steps' (the
    /// same render asked as a JPEG) within 3/255, upright, with the source's
    /// upright size: made from the output's planes (80 px: its 40x25
    /// chroma is at least the placeholder's 32x20) or, when they are
    /// smaller (30 px), from the decode's.
    @Test(arguments: [1, 6], [80, 30])
    func thePlaceholderIsTheRGBSteps(orientation: Int, side: Int) throws {
        let jpeg = try Self.jpeg(Self.card(width: 160, height: 100), subsampling: TJSAMP_420, orientation: orientation)
        func placeholder(_ format: VariantSpec.Format) throws -> PlaceholderPixels {
            let spec = VariantSpec(width: side, height: side, format: format, quality: 80)
            var made: PlaceholderPixels?
            _ = try Self.plan(jpeg, [spec]).render(jpeg, deadline: Self.far, placeholder: { made = $0 })
            return try #require(made)
        }
        let (planes, rgb) = (try placeholder(.avif), try placeholder(.jpeg))
        #expect((planes.width, planes.height) == (rgb.width, rgb.height))
        #expect((planes.sourceWidth, planes.sourceHeight) == (orientation == 6 ? (100, 160) : (160, 100)))
        let difference = zip(planes.rgba, rgb.rgba).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
        #expect(Double(difference) / Double(planes.rgba.count) <= 3)
    }
}
