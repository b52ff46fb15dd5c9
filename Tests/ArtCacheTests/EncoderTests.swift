import ArtCacheFixtures
import CHeifAOM
import CPixels
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

    /// `cpix_rgb_to_ycbcr420`, known answers: JPEG's BT.601 full-range
    /// matrix (red, green, blue, white, black), chroma the mean of each 2x2
    /// block, and an odd edge's lone column and row counted on their own.
    @Test func rgbToYCbCr420KnownAnswers() {
        func convert(_ rgb: [UInt8], _ width: Int, _ height: Int) -> (y: [UInt8], cb: [UInt8], cr: [UInt8]) {
            let cw = (width + 1) / 2, ch = (height + 1) / 2
            var y = [UInt8](repeating: 0, count: width * height)
            var cb = [UInt8](repeating: 0, count: cw * ch), cr = cb
            cpix_rgb_to_ycbcr420(rgb, Int32(width), Int32(height), &y, Int32(width), &cb, Int32(cw), &cr, Int32(cw))
            return (y, cb, cr)
        }
        // One colour per 2x2 block: Y, Cb, Cr as JFIF gives them, rounded.
        for (rgb, expected) in [([255, 0, 0], [76, 85, 255]), ([0, 255, 0], [150, 44, 21]), ([0, 0, 255], [29, 255, 107]),
                                ([255, 255, 255], [255, 128, 128]), ([0, 0, 0], [0, 128, 128])] as [([UInt8], [UInt8])] {
            let out = convert(Array([[UInt8]](repeating: rgb, count: 4).joined()), 2, 2)
            #expect(out.y == [UInt8](repeating: expected[0], count: 4), "Y of \(rgb)")
            #expect(out.cb == [expected[1]] && out.cr == [expected[2]], "Cb, Cr of \(rgb)")
        }
        // 3x3: the first block is red and blue mixed (its chroma their mean);
        // the right column, the bottom row and the corner are blocks of their own.
        let red: [UInt8] = [255, 0, 0], blue: [UInt8] = [0, 0, 255], white: [UInt8] = [255, 255, 255]
        let rows: [[[UInt8]]] = [[red, blue, white], [blue, red, white], [red, red, blue]]
        let out = convert(Array(rows.joined().joined()), 3, 3)
        #expect(out.y == [76, 29, 255, 29, 76, 255, 76, 76, 29])
        // Mean of red and blue: (127.5, 0, 127.5) → Cb 170, Cr 181; white → 128, 128; red; blue.
        #expect(out.cb == [170, 128, 85, 255])
        #expect(out.cr == [181, 128, 255, 107])
    }

    /// The 4:2:0 AVIF is converted here and tagged as converted: its `colr`
    /// box says BT.601, full range (primaries and transfer unspecified, as
    /// libheif tagged its own conversions), and libvips decodes it back to
    /// the source's colours; 4:4:4 (quality 90 and up) and alpha still go
    /// through libheif, with the same tag.
    @Test func avifPlanesAreBT601FullRangeAndKeepTheColours() throws {
        let nclx = Data([0x63, 0x6f, 0x6c, 0x72, 0x6e, 0x63, 0x6c, 0x78, 0, 2, 0, 2, 0, 6, 0x80])
        let zone = try Self.zonePlate(width: 96, height: 64)
        for (pixels, quality) in [(zone, 80), (zone, 95), (Self.withAlpha(zone), 80)] {
            let avif = try AVIFEncoder.encode(pixels, quality: quality, speed: 9)
            #expect(avif.range(of: nclx) != nil, "colr nclx 2/2/6/full at q\(quality), \(pixels.channels) channels")
        }
        // Flat colours (one per quadrant, odd sizes): back within 2/255 per sample.
        let colours: [[UInt8]] = [[200, 40, 90], [20, 180, 60], [250, 250, 240], [30, 30, 120]]
        let (width, height) = (37, 23)
        var bytes: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width { bytes += colours[(y < height / 2 ? 0 : 2) + (x < width / 2 ? 0 : 1)] }
        }
        let flat = PixelBuffer(width: width, height: height, channels: 3, bytes: bytes)
        let decoded = try SyntheticImage.pixels(try AVIFEncoder.encode(flat, quality: 89, speed: 9))
        #expect((decoded.width, decoded.height) == (width, height))
        // Away from the quadrants' edges (chroma is shared by 2x2 blocks there).
        for (x, y) in [(4, 4), (width - 5, 4), (4, height - 5), (width - 5, height - 5)] {
            let expected = colours[(y < height / 2 ? 0 : 2) + (x < width / 2 ? 0 : 1)]
            let i = (y * width + x) * decoded.bands
            let got = Array(decoded.bytes[i..<i + 3])
            #expect(zip(got, expected).allSatisfy { abs(Int($0) - Int($1)) <= 2 }, "at (\(x), \(y)): \(got) for \(expected)")
        }
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

    /// Speed 9 (the cold effort) turns libaom's trellis quantisation off
    /// through libheif's `aom:` parameters; slower speeds keep it. The option
    /// reaches libaom: without it the bytes differ, and both decode.
    @Test func avifSpeedNineSkipsTrellisQuantisation() throws {
        #expect(AVIFEncoder.aomOptions(speed: 9).map { "\($0.0)=\($0.1)" } == ["disable-trellis-quant=1"])
        #expect(AVIFEncoder.aomOptions(speed: 8).isEmpty)
        #expect(AVIFEncoder.aomOptions(speed: 6).isEmpty)
        let rgb = try Self.zonePlate(width: 120, height: 120)
        let cold = try AVIFEncoder.encode(rgb, quality: 60, speed: 9)
        let trellis = try AVIFEncoder.encode(rgb, quality: 60, speed: 9, aomOptions: [])
        #expect(cold != trellis, "speed 9 with and without trellis quantisation encode differently")
        try decodes(cold, 120, 120)
        try decodes(trellis, 120, 120)
    }

    /// Our libheif plugin (`CHeifAOM`: libaom encoders kept between images)
    /// writes the bytes libheif's own aom plugin writes, for every kind of
    /// image AVIFEncoder makes (4:2:0 planes, 4:4:4 from quality 90, alpha,
    /// grey, odd sizes, both efforts), and the same bytes again once other
    /// images have gone through its encoders.
    @Test func thePooledAV1EncoderWritesLibheifsOwnBytes() throws {
        #expect(AVIFEncoder.pooledEncoder != nil, "the artcache-aom plugin is registered")
        let zone = try Self.zonePlate(width: 120, height: 90)
        let odd = try Self.zonePlate(width: 37, height: 23)
        let grey = PixelBuffer(width: 33, height: 17, channels: 1, bytes: (0..<(33 * 17)).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let cases: [(PixelBuffer, Int, Int)] = [(zone, 60, 9), (zone, 60, 6), (zone, 95, 9), (Self.withAlpha(zone), 60, 9),
                                               (grey, 50, 9), (odd, 72, 9)]
        var first: [Data] = []
        for (pixels, quality, speed) in cases {
            let pooled = try AVIFEncoder.encode(pixels, quality: quality, speed: speed)
            let stock = try AVIFEncoder.encode(pixels, quality: quality, speed: speed, stock: true)
            #expect(pooled == stock, "\(pixels.width)x\(pixels.height)x\(pixels.channels) q\(quality) s\(speed): \(pooled.count) B, libheif's \(stock.count) B")
            first.append(pooled)
        }
        for ((pixels, quality, speed), bytes) in zip(cases.reversed(), first.reversed()) {
            #expect(try AVIFEncoder.encode(pixels, quality: quality, speed: speed) == bytes, "again, after the others")
        }
    }

    /// An encoder is kept: back-to-back images of one size go through one
    /// libaom encoder (its image count grows). Other tests encode at the same
    /// time and may push it out of the pool (four idle at most); of three
    /// runs of eight images, one seeing it kept is enough.
    @Test func theAV1EncoderIsKeptBetweenImages() throws {
        let image = try Self.zonePlate(width: 53, height: 41)
        var most = 0
        for _ in 0..<3 where most < 2 {
            for _ in 0..<8 { _ = try AVIFEncoder.encode(image, quality: 61, speed: 9) }
            most = max(most, cheif_aom_images_of_idle(53, 41))
        }
        #expect(most >= 2, "an idle 53x41 encoder has encoded \(most) images")
        #expect(cheif_aom_idle() <= CHEIF_AOM_POOL_MAX)
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
