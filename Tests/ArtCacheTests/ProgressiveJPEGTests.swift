import ArtCacheFixtures
import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheRender

/// Issue 52 §4: JPEG outputs at or above `[thumbnails] progressive_from`
/// (600 px on the longer side by default: the issue proposed 300, but
/// progressive encoding costs 5-7x libjpeg-turbo's baseline encode for ~6%
/// fewer bytes, Benchmarks/RESULTS.md) are progressive (SOF2), smaller ones
/// baseline (SOF0), on both render paths.
@Suite("Progressive JPEG from a size", .timeLimit(.minutes(3)))
struct ProgressiveJPEGTests {
    /// The frame marker of a JPEG: 0xC0 baseline, 0xC1 extended, 0xC2
    /// progressive (walks the marker segments from SOI; nil when none).
    static func frameMarker(_ jpeg: Data) -> UInt8? {
        let bytes = [UInt8](jpeg)
        guard bytes.count > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var i = 2
        while i + 4 <= bytes.count {
            guard bytes[i] == 0xFF else { return nil }
            let marker = bytes[i + 1]
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) { return marker }
            if marker == 0xDA { return nil }   // scan data before any frame header
            i += 2 + Int(bytes[i + 2]) << 8 + Int(bytes[i + 3])
        }
        return nil
    }

    static let baseline: UInt8 = 0xC0, progressive: UInt8 = 0xC2

    /// The default: 600 px (the threshold itself) progressive, 599, 300 and
    /// 100 px baseline; JPEG source (the fast path) and PNG source (libvips).
    @Test(arguments: [true, false]) func fromTheDefaultSize(fastJPEG: Bool) async throws {
        let renderer = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = fastJPEG })
        #expect(renderer.settings.progressiveFrom == 600)
        let source = fastJPEG ? try SyntheticImage.zonePlateJPEG(width: 800, height: 800, quality: 90)
            : try SyntheticImage.make(width: 800, height: 800, suffix: ".png")
        let before = renderer.fastRenders
        for (side, marker) in [(600, Self.progressive), (599, Self.baseline), (300, Self.baseline), (100, Self.baseline)] {
            let out = try await renderer.render(source, spec: VariantSpec(width: side, height: side, fit: .cover, format: .jpeg))
            #expect((out.width, out.height) == (side, side))
            #expect(Self.frameMarker(out.data) == marker, "\(side) px, fast path \(fastJPEG)")
        }
        #expect(renderer.fastRenders - before == (fastJPEG ? 4 : 0), "the path under test rendered them")
    }

    /// The size that decides is the output's, not the box's: a 200 px source
    /// into an 800 px box (never enlarged) is a 200 px baseline JPEG.
    @Test func theOutputSizeDecides() async throws {
        let renderer = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = true })
        let source = try SyntheticImage.zonePlateJPEG(width: 200, height: 150, quality: 90)
        let out = try await renderer.render(source, spec: VariantSpec(width: 800, height: 800, format: .jpeg))
        #expect(max(out.width, out.height) == 200)
        #expect(Self.frameMarker(out.data) == Self.baseline)
    }

    /// `progressive_from = 0`: every JPEG is progressive; a value past every
    /// output: none is. Other formats are untouched.
    @Test func theSettingMovesTheLine() async throws {
        let source = try SyntheticImage.zonePlateJPEG(width: 800, height: 800, quality: 90)
        let all = Renderer(settings: Fixtures.thumbnails { $0.progressiveFrom = 0 })
        let none = Renderer(settings: Fixtures.thumbnails { $0.progressiveFrom = 100_000 })
        let small = VariantSpec(width: 100, height: 100, format: .jpeg), large = VariantSpec(width: 600, height: 600, format: .jpeg)
        #expect(Self.frameMarker(try await all.render(source, spec: small).data) == Self.progressive)
        #expect(Self.frameMarker(try await none.render(source, spec: large).data) == Self.baseline)
        let webp = try await all.render(source, spec: VariantSpec(width: 600, height: 600, format: .webp))
        #expect(Sniffer.sniff(webp.data).format == .webp)
    }

    /// The marker walk itself, on hand-made headers.
    @Test func frameMarkerKnownAnswers() {
        let sof2 = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC4, 0x00, 0x02, 0xFF, 0xC2, 0x00, 0x02])
        #expect(Self.frameMarker(sof2) == 0xC2)
        #expect(Self.frameMarker(Data([0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x02])) == 0xC0)
        #expect(Self.frameMarker(Data([0x89, 0x50, 0x4E, 0x47, 0x0D])) == nil)
    }
}
