import ArtCacheFixtures
import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheRender

/// The fast path's WebP (libwebp's advanced API) and AVIF (libheif + libaom)
/// encoders, real codecs: outputs that decode back with libvips at their
/// size, the caller's quality and effort honoured, and the fast path using
/// them for JPEG sources, with the same setting honoured by libvips' savers.
@Suite("Encoders at codec speed", .timeLimit(.minutes(3)))
struct EncoderTests {
    let renderer = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = true })

    /// RGB pixels of a colour zone plate (hard to compress: every setting shows).
    static func zonePlate(width: Int, height: Int) throws -> PixelBuffer {
        let jpeg = try SyntheticImage.zonePlateJPEG(width: width, height: height, colour: true, quality: 95)
        return try FastJPEGTests.pixels(jpeg)
    }

    /// The same pixels with an alpha channel (a horizontal ramp).
    static func withAlpha(_ rgb: PixelBuffer) -> PixelBuffer {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(rgb.width * rgb.height * 4)
        for y in 0..<rgb.height {
            for x in 0..<rgb.width {
                let i = (y * rgb.width + x) * 3
                bytes += [rgb.bytes[i], rgb.bytes[i + 1], rgb.bytes[i + 2], UInt8(x * 255 / max(1, rgb.width - 1))]
            }
        }
        return PixelBuffer(width: rgb.width, height: rgb.height, channels: 4, bytes: bytes)
    }

    /// libvips' header of encoded bytes: decodes at the size written.
    func decodes(_ data: Data, _ width: Int, _ height: Int, alpha: Bool = false,
                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        let header = try renderer.header(of: data)
        #expect((header.width, header.height) == (width, height), sourceLocation: sourceLocation)
        #expect(header.hasAlpha == alpha, sourceLocation: sourceLocation)
    }

    @Test func avifDecodesBackAtItsSizeAndIsSniffedAsAVIF() throws {
        let rgb = try Self.zonePlate(width: 150, height: 100)
        let avif = try AVIFEncoder.encode(rgb, quality: 50, speed: 9)
        #expect(Sniffer.sniff(avif).format == .avif)
        #expect(avif.count > 12 && String(decoding: avif[4..<12], as: UTF8.self) == "ftypavif", "major brand avif")
        try decodes(avif, 150, 100)
        // Alpha is kept; grey is widened to RGB.
        try decodes(try AVIFEncoder.encode(Self.withAlpha(rgb), quality: 50, speed: 9), 150, 100, alpha: true)
        let grey = PixelBuffer(width: 33, height: 17, channels: 1, bytes: (0..<(33 * 17)).map { UInt8($0 % 256) })
        try decodes(try AVIFEncoder.encode(grey, quality: 50, speed: 9), 33, 17)
    }

    @Test func avifSpeedChangesTheOutput() throws {
        let rgb = try Self.zonePlate(width: 120, height: 120)
        let fast = try AVIFEncoder.encode(rgb, quality: 50, speed: 9)
        let slow = try AVIFEncoder.encode(rgb, quality: 50, speed: 6)
        #expect(fast != slow, "speed 9 and speed 6 encode differently")
        try decodes(fast, 120, 120)
        try decodes(slow, 120, 120)
        // The same call twice gives the same bytes (nothing but the setting differs).
        #expect(try AVIFEncoder.encode(rgb, quality: 50, speed: 9) == fast)
    }

    @Test func webpMethodChangesTheOutputAndBothDecode() throws {
        let rgb = try Self.zonePlate(width: 160, height: 90)
        let m0 = try WebPEncoder.encode(rgb, quality: 80, method: 0)
        let m4 = try WebPEncoder.encode(rgb, quality: 80, method: 4)
        #expect(m0 != m4, "method 0 and method 4 encode differently")
        for webp in [m0, m4] {
            #expect(Sniffer.sniff(webp).format == .webp)
            try decodes(webp, 160, 90)
        }
        #expect(try WebPEncoder.encode(rgb, quality: 80, method: 4) == m4)
        try decodes(try WebPEncoder.encode(Self.withAlpha(rgb), quality: 80, method: 4), 160, 90, alpha: true)
    }

    @Test func qualityIsHonoured() throws {
        let rgb = try Self.zonePlate(width: 200, height: 200)
        let webp = (try WebPEncoder.encode(rgb, quality: 30, method: 4), try WebPEncoder.encode(rgb, quality: 90, method: 4))
        #expect(webp.0.count < webp.1.count, "WebP q30 \(webp.0.count) B, q90 \(webp.1.count) B")
        let avif = (try AVIFEncoder.encode(rgb, quality: 30, speed: 9), try AVIFEncoder.encode(rgb, quality: 90, speed: 9))
        #expect(avif.0.count < avif.1.count, "AVIF q30 \(avif.0.count) B, q90 \(avif.1.count) B")
    }

    /// A failure is typed and carries libheif's own message.
    @Test func libheifErrorsAreTyped() throws {
        // Wider than AV1 allows (65536).
        let wide = PixelBuffer(width: 70_000, height: 1, channels: 3)
        #expect {
            try AVIFEncoder.encode(wide, quality: 50, speed: 9)
        } throws: { error in
            guard let error = error as? EncoderError else { return false }
            return error.codec == "libheif" && !error.message.isEmpty
        }
    }

    /// A JPEG source to f=avif and f=webp: the fast path renders them (its
    /// counter moves), with libvips' sizes, in the requested format.
    @Test func theFastPathEncodesAVIFAndWebP() async throws {
        let vips = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = false })
        let zone = try SyntheticImage.zonePlateJPEG(width: 400, height: 300, colour: true, quality: 90)
        let grey = try SyntheticImage.orientedJPEG(width: 120, height: 60, orientation: 6)
        for (source, spec) in [(zone, VariantSpec(width: 100, height: 100, fit: .cover, format: .avif, quality: 50)),
                               (zone, VariantSpec(width: 300, height: 300, format: .avif, quality: 50)),
                               (grey, VariantSpec(width: 40, height: 40, format: .avif, quality: 50)),
                               (zone, VariantSpec(width: 100, height: 100, format: .webp, quality: 80))] {
            let before = renderer.fastRenders
            let a = try await renderer.render(source, spec: spec)
            #expect(renderer.fastRenders == before + 1, "\(spec.canonical): the fast path rendered it")
            let b = try await vips.render(source, spec: spec)
            #expect(a.format == spec.format && Sniffer.sniff(a.data).format == (spec.format == .avif ? .avif : .webp))
            #expect((a.width, a.height) == (b.width, b.height), "\(spec.canonical)")
            try decodes(a.data, a.width, a.height)
        }
        // Several outputs of one decode, formats mixed.
        let specs = [VariantSpec(width: 100, height: 100, format: .avif), VariantSpec(width: 100, height: 100, format: .webp),
                     VariantSpec(width: 100, height: 100, format: .jpeg)]
        let before = renderer.fastRenders
        let outputs = try await renderer.render(zone, specs: specs)
        #expect(renderer.fastRenders == before + 1)
        #expect(outputs.map { Sniffer.sniff($0.data).format } == [.avif, .webp, .jpeg])
    }

    /// The renderer's encoder setting reaches both paths: the fast path's
    /// encoders and libvips' savers change their output with the effort.
    @Test(arguments: [true, false]) func bothPathsHonourTheEffort(fastJPEG: Bool) async throws {
        let zone = try SyntheticImage.zonePlateJPEG(width: 400, height: 300, colour: true, quality: 90)
        let thumbnails = Fixtures.thumbnails { $0.fastJPEG = fastJPEG }
        let asked = Locked<[String]>([])
        func renderer(webp: Int, avif: Int) -> Renderer {
            Renderer(settings: thumbnails) { spec, format in
                asked.withLock { $0.append("\(spec.format.rawValue)→\(format.rawValue)") }
                return EncoderSetting(quality: spec.quality, effort: format == .avif ? avif : webp)
            }
        }
        let (low, high) = (renderer(webp: 0, avif: 9), renderer(webp: 6, avif: 6))
        for format in [VariantSpec.Format.webp, .avif] {
            let spec = VariantSpec(width: 120, height: 120, format: format, quality: 60)
            let (a, b) = (try await low.render(zone, spec: spec), try await high.render(zone, spec: spec))
            #expect(a.data != b.data, "\(format.rawValue), fast path \(fastJPEG): the effort changes the output")
            #expect((a.width, a.height) == (b.width, b.height))
            #expect(Sniffer.sniff(a.data).format == Sniffer.sniff(b.data).format)
        }
        #expect(low.fastRenders == (fastJPEG ? 2 : 0))
        #expect(asked.withLock { $0 } == ["webp→webp", "webp→webp", "avif→avif", "avif→avif"])
    }

    @Test func defaultsAreTodaysLibvipsDefaults() {
        let spec = VariantSpec(width: 10, height: 10, quality: 71)
        #expect(RenderPlan.encoderSetting(for: spec, format: .webp) == EncoderSetting(quality: 71, effort: 4))
        #expect(RenderPlan.encoderSetting(for: spec, format: .avif) == EncoderSetting(quality: 71, effort: 5))
        // libvips' effort: webpsave's is the method, heifsave's is 9 - speed (clamped).
        #expect(EncoderSetting(quality: 50, effort: 5).vipsEffort(.avif) == 4)
        #expect(EncoderSetting(quality: 50, effort: 12).vipsEffort(.avif) == 0)
        #expect(EncoderSetting(quality: 50, effort: 6).vipsEffort(.webp) == 6)
        #expect(EncoderSetting(quality: 50, effort: -1).vipsEffort(.webp) == 0)
    }
}
