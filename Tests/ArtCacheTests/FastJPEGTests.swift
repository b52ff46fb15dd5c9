import ArtCacheCore
import ArtCacheFixtures
import Foundation
import Testing
@testable import ArtCacheRender

/// The TurboJPEG fast path against libvips' own render of the same request:
/// the same sizes, pixels within the quality guard, the same orientation,
/// and everything it does not handle left to libvips.
@Suite("JPEG fast path", .timeLimit(.minutes(3)))
struct FastJPEGTests {
    let fast = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = true })
    let vips = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = false })

    /// Decoded to RGB at full size (grey JPEGs too), for comparing.
    static func pixels(_ jpeg: Data) throws -> PixelBuffer {
        let decoder = try TurboJPEGDecoder()
        return try jpeg.withUnsafeBytes { bytes in
            try decoder.decode(bytes, factor: (1, 1), channels: 3, header: try decoder.header(bytes))
        }
    }

    /// Mean absolute difference per sample, 0...255.
    static func meanDifference(_ a: Data, _ b: Data) throws -> Double {
        let (x, y) = (try pixels(a), try pixels(b))
        #expect(x.width == y.width && x.height == y.height)
        guard x.bytes.count == y.bytes.count else { return 255 }
        return Double(zip(x.bytes, y.bytes).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(x.bytes.count)
    }

    /// Both renderers, one spec; the fast one must have taken its path.
    func both(_ data: Data, _ spec: VariantSpec) async throws -> (fast: RenderedImage, vips: RenderedImage) {
        let before = fast.fastRenders
        let a = try await fast.render(data, spec: spec)
        #expect(fast.fastRenders == before + 1, "\(spec.canonical): the fast path rendered it")
        let b = try await vips.render(data, spec: spec)
        return (a, b)
    }

    @Test func sizesAreLibvipsSizes() async throws {
        let specs = [VariantSpec(width: 100, height: 100), VariantSpec(width: 100, height: 100, fit: .cover),
                     VariantSpec(width: 300, height: 300), VariantSpec(width: 300, height: 300, fit: .cover),
                     VariantSpec(width: 64, height: 200, fit: .cover), VariantSpec(width: 1000, height: 1000),
                     VariantSpec(width: 37, height: 11)]
        for (width, height) in [(600, 600), (640, 356), (290, 442), (1000, 300), (50, 40), (601, 7)] {
            let jpeg = try Fixtures.image(width: width, height: height, suffix: ".jpg[Q=90]")
            for spec in specs {
                let (a, b) = try await both(jpeg, spec)
                #expect((a.width, a.height) == (b.width, b.height), "\(width)x\(height) → \(spec.canonical)")
                #expect(a.format == .jpeg && !a.hasAlpha)
            }
            // Several outputs from one decode: each as rendered alone.
            let multi = try await fast.render(jpeg, specs: specs)
            let alone = try await vips.render(jpeg, specs: specs)
            #expect(multi.map { [$0.width, $0.height] } == alone.map { [$0.width, $0.height] }, "\(width)x\(height)")
        }
    }

    /// The quality guard: against libvips' own Lanczos-3 thumbnail, at most
    /// 4/255 mean difference on zone plates (where a box filter aliases:
    /// ≈6.5) and on photographs (the corpus's, when present).
    @Test func closeToLibvipsLanczosOnZonePlates() async throws {
        var differences: [Double] = []
        for colour in [true, false] {
            let zone = try SyntheticImage.zonePlateJPEG(width: 600, height: 600, colour: colour, quality: 95)
            for spec in [VariantSpec(width: 100, height: 100, fit: .cover, quality: 95),
                         VariantSpec(width: 150, height: 150, quality: 95), VariantSpec(width: 256, height: 256, quality: 95)] {
                let (a, b) = try await both(zone, spec)
                differences.append(try Self.meanDifference(a.data, b.data))
            }
        }
        let mean = differences.reduce(0, +) / Double(differences.count)
        #expect(mean <= 4, "zone plates: \(differences)")
    }

    @Test(.enabled(if: Fixtures.corpusExists)) func closeToLibvipsLanczosOnPhotographs() async throws {
        var differences: [String: Double] = [:]
        // (The corpus's other photographs embed Adobe RGB or "Generic RGB"
        // profiles: libvips renders those, see everythingElseIsLibvips.)
        for name in ["php_payload_in_metadata", "exif_orientation_1", "exif_orientation_3", "exif_orientation_6"] {
            let jpeg = try Data(contentsOf: URL(fileURLWithPath: Fixtures.corpus + "/images/jpeg/\(name).jpg"))
            for spec in [VariantSpec(width: 100, height: 100, fit: .cover, quality: 95), VariantSpec(width: 200, height: 200, quality: 95)] {
                let (a, b) = try await both(jpeg, spec)
                #expect((a.width, a.height) == (b.width, b.height), "\(name) \(spec.canonical)")
                differences["\(name) \(spec.width)"] = try Self.meanDifference(a.data, b.data)
            }
        }
        let mean = differences.values.reduce(0, +) / Double(differences.count)
        #expect(mean <= 4, "photographs: \(differences)")
    }

    /// WebP outputs too (libwebp encodes): libvips' sizes, close pixels.
    @Test func webpOutputs() async throws {
        let zone = try SyntheticImage.zonePlateJPEG(width: 400, height: 300, colour: true, quality: 95)
        let grey = try SyntheticImage.orientedJPEG(width: 120, height: 60, orientation: 6)
        for (source, spec) in [(zone, VariantSpec(width: 100, height: 100, fit: .cover, format: .webp, quality: 95)),
                               (grey, VariantSpec(width: 40, height: 40, format: .webp, quality: 95))] {
            let (a, b) = try await both(source, spec)
            #expect(a.format == .webp && a.data.starts(with: Array("RIFF".utf8)) && a.data[8..<12] == Data("WEBP".utf8))
            #expect((a.width, a.height) == (b.width, b.height))
            let header = try fast.header(of: a.data)
            #expect((header.width, header.height) == (a.width, a.height))
        }
    }

    /// Every EXIF orientation turns the pixels as libvips' autorotate does.
    @Test func orientationsAreLibvipsOrientations() async throws {
        for orientation in 1...8 {
            let jpeg = try SyntheticImage.orientedJPEG(width: 120, height: 60, orientation: orientation)
            #expect(JPEGMetadata(jpeg)?.orientation == orientation)
            for spec in [VariantSpec(width: 40, height: 40), VariantSpec(width: 30, height: 30, fit: .cover)] {
                let (a, b) = try await both(jpeg, spec)
                #expect((a.width, a.height) == (b.width, b.height), "orientation \(orientation)")
                #expect(try Self.meanDifference(a.data, b.data) <= 6, "orientation \(orientation) \(spec.canonical)")
            }
        }
        guard Fixtures.corpusExists else { return }
        for orientation in 1...8 {
            let jpeg = try Data(contentsOf: URL(fileURLWithPath: Fixtures.corpus + "/images/jpeg/exif_orientation_\(orientation).jpg"))
            let (a, b) = try await both(jpeg, VariantSpec(width: 100, height: 100, quality: 95))
            #expect((a.width, a.height) == (b.width, b.height), "corpus orientation \(orientation)")
            #expect(try Self.meanDifference(a.data, b.data) <= 6, "corpus orientation \(orientation)")
        }
    }

    /// What the fast path does not handle goes to libvips, with libvips' result.
    @Test func everythingElseIsLibvips() async throws {
        let jpeg = try Fixtures.image(width: 200, height: 100, suffix: ".jpg[Q=90]")
        var cases: [(String, Data, VariantSpec)] = [
            ("CMYK", try Fixtures.cmykJPEG(withProfile: false), VariantSpec(width: 50, height: 50)),
            ("CMYK with a profile", try Fixtures.cmykJPEG(withProfile: true), VariantSpec(width: 50, height: 50)),
            ("PNG", try Fixtures.image(width: 200, height: 100, suffix: ".png"), VariantSpec(width: 50, height: 50)),
            ("smart crop", jpeg, VariantSpec(width: 50, height: 50, fit: .smart)),
            ("PNG output", jpeg, VariantSpec(width: 50, height: 50, format: .png)),
        ]
        if Fixtures.corpusExists {
            let xyb = try Data(contentsOf: URL(fileURLWithPath: Fixtures.corpus + "/images/jpeg/xyb_jpegli_icc.jpg"))
            cases.append(("an XYB ICC profile", xyb, VariantSpec(width: 50, height: 50)))
            for (name, file) in [("an Adobe RGB profile", "baseline_photo_sample"), ("a Generic RGB profile", "exif_truncated_dpi")] {
                let photo = try Data(contentsOf: URL(fileURLWithPath: Fixtures.corpus + "/images/jpeg/\(file).jpg"))
                cases.append((name, photo, VariantSpec(width: 50, height: 50)))
            }
        }
        for (name, data, spec) in cases {
            let before = fast.fastRenders
            let a = try await fast.render(data, spec: spec)
            let b = try await vips.render(data, spec: spec)
            #expect(fast.fastRenders == before, "\(name): left to libvips")
            #expect(a.data == b.data, "\(name): libvips' render")
        }
        // A truncated JPEG: TurboJPEG warns, libvips decides (it renders
        // what is there, or names the error), as without the fast path.
        let cut = jpeg.prefix(jpeg.count * 2 / 3)
        let before = fast.fastRenders
        /// The bytes rendered, or the error's code: the same either way.
        func outcome(_ renderer: Renderer) async -> (data: Data?, code: String?) {
            do {
                return (try await renderer.render(cut, spec: VariantSpec(width: 50, height: 50)).data, nil)
            } catch {
                return (nil, "\((error as? RenderError)?.code as Any)")
            }
        }
        let (a, b) = (await outcome(fast), await outcome(vips))
        #expect(fast.fastRenders == before)
        #expect(a.data == b.data && a.code == b.code, "\(String(describing: a.code)) \(String(describing: b.code))")
        #expect(fast.settings.fastJPEG && !vips.settings.fastJPEG)
    }

    @Test func theDeadlineIsCheckedBetweenSteps() async throws {
        let hurried = Renderer(settings: Fixtures.thumbnails { $0.renderTimeout = 0.000_001 })
        let jpeg = try SyntheticImage.zonePlateJPEG(width: 600, height: 600, colour: true, quality: 90)
        await #expect { try await hurried.render(jpeg, spec: VariantSpec(width: 100, height: 100)) } throws: {
            ($0 as? RenderError)?.code == .timedOut
        }
    }

    /// The resampler: flat stays flat, and stripes at the Nyquist limit
    /// average out instead of aliasing into bands.
    @Test func lanczosNeitherShiftsLevelsNorAliases() {
        let flat = PixelBuffer(width: 90, height: 70, channels: 3, bytes: [UInt8](repeating: 77, count: 90 * 70 * 3))
        let small = Resampler.resize(flat, width: 31, height: 17)
        #expect((small.width, small.height, small.channels) == (31, 17, 3))
        #expect(small.bytes.allSatisfy { $0 == 77 })
        var stripes = PixelBuffer(width: 200, height: 20, channels: 1)
        for y in 0..<20 { for x in 0..<200 { stripes.bytes[y * 200 + x] = x % 2 == 0 ? 0 : 255 } }
        let reduced = Resampler.resize(stripes, width: 50, height: 5)
        let inner = (0..<5).flatMap { y in (3..<47).map { reduced.bytes[y * 50 + $0] } }
        #expect(inner.allSatisfy { abs(Int($0) - 128) <= 2 }, "\(inner.min()!)...\(inner.max()!)")
        #expect(Resampler.resize(flat, width: 90, height: 70).bytes == flat.bytes)
    }

    /// The C loop takes eight output rows at a time, four column blocks at
    /// a time, one channel four output pixels at a time (one at a time near
    /// the edges), RGB a pixel's three channels at a time: every output byte
    /// is what the taps give summed one by one, in Double here (±1 for float
    /// rounding and fused multiply-adds), on sizes that reach every path:
    /// widths not a multiple of 4 or 8, one channel and three, edge taps on
    /// both sides, 2:1 (the P2b case, RGB and a plane), one channel at 4:1
    /// (25 taps), fewer than 8 output rows, and a last group of 3 rows after 8.
    @Test(arguments: [(600, 600, 300, 300, 3), (601, 7, 37, 3, 3), (150, 150, 100, 100, 1), (1000, 300, 64, 200, 3),
                      (97, 13, 5, 11, 3), (33, 9, 32, 9, 1), (600, 37, 150, 9, 1), (9, 9, 1, 1, 3),
                      (600, 600, 300, 300, 1), (601, 7, 37, 3, 1), (97, 13, 5, 11, 1), (1000, 300, 64, 200, 1)])
    func theResamplerIsItsTapsSummed(_ sw: Int, _ sh: Int, _ tw: Int, _ th: Int, _ channels: Int) {
        var source = PixelBuffer(width: sw, height: sh, channels: channels)
        var seed: UInt32 = 12345
        for i in source.bytes.indices {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            source.bytes[i] = UInt8(truncatingIfNeeded: (i * 7 + (i / (sw * channels)) * 13) ^ Int(seed >> 28))
        }
        let out = Resampler.resize(source, width: tw, height: th)
        let h = Resampler.taps(source: sw, target: tw), v = Resampler.taps(source: sh, target: th)
        var worst = 0
        for y in 0..<th {
            var column = [Double](repeating: 0, count: sw * channels)
            for k in 0..<Int(v.count[y]) {
                let row = Int(v.start[y]) + k, w = Double(v.weights[y * v.taps + k])
                for i in 0..<sw * channels { column[i] += w * Double(source.bytes[row * sw * channels + i]) }
            }
            for x in 0..<tw {
                for c in 0..<channels {
                    var sum = 0.0
                    for k in 0..<Int(h.count[x]) {
                        sum += Double(h.weights[x * h.taps + k]) * column[(Int(h.start[x]) + k) * channels + c]
                    }
                    let expected = Int(min(255, max(0, sum + 0.5)))
                    worst = max(worst, abs(expected - Int(out.bytes[(y * tw + x) * channels + c])))
                }
            }
        }
        #expect(worst <= 1, "\(sw)x\(sh) → \(tw)x\(th), \(channels) channels: off by \(worst)")
    }

    /// EXIF orientation from either byte order; ICC profiles told apart.
    @Test func metadataKnownAnswers() throws {
        #expect(JPEGMetadata(Data([0x89, 0x50])) == nil)
        let plain = try Fixtures.image(width: 8, height: 8, suffix: ".jpg")
        #expect(JPEGMetadata(plain) == JPEGMetadata(orientation: 1))
        // II and MM TIFF headers with orientation 6 in IFD0.
        let little: [UInt8] = Array("II".utf8) + [42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0]
        let big: [UInt8] = Array("MM".utf8) + [0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0]
        #expect(JPEGMetadata.orientation(tiff: little[...]) == 6)
        #expect(JPEGMetadata.orientation(tiff: big[...]) == 6)
        #expect(JPEGMetadata.orientation(tiff: Array(little.prefix(12))[...]) == nil)
        let cmyk = try Fixtures.cmykJPEG(withProfile: true)
        #expect(JPEGMetadata(cmyk)?.hasProfile == true && JPEGMetadata(cmyk)?.profileIsSRGB == false)
    }
}
