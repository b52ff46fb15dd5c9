import ArtCacheCore
import ArtCacheFixtures
import CVipsShim
import Foundation
import Testing
@testable import ArtCacheRender

/// Colour management (issue 35 item 4): an embedded ICC profile other than
/// sRGB is applied before it is stripped, on every render path, against a
/// colour-managed reference (libvips' icc_transform to sRGB, then the same
/// thumbnail); sRGB-tagged, untagged and CMYK sources render bit for bit as
/// before (the same libvips steps without the profile step).
@Suite("Colour management", .timeLimit(.minutes(3)))
struct ColourTests {
    let fast = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = true })
    let vips = Renderer(settings: Fixtures.thumbnails { $0.fastJPEG = false })
    static let spec = VariantSpec(width: 120, height: 120, quality: 95)

    /// Mean absolute difference per sample (0...255) of two encoded images'
    /// pixels, decoded without any colour transform.
    static func difference(_ a: Data, _ b: Data) throws -> Double {
        let d = try SyntheticImage.pixels(a).meanDifference(try SyntheticImage.pixels(b))
        #expect(d != nil, "the same size")
        return d ?? 255
    }

    /// The render as it was before colour management: libvips' thumbnail
    /// straight from the bytes, to sRGB (no profile step), saved as the
    /// renderer saves a JPEG (or a PNG).
    static func naive(_ data: Data, spec: VariantSpec = spec) throws -> Data {
        #expect(cvips_init("artcache") == 0)
        let render = try #require(cvips_render_new(30))
        defer { cvips_render_free(render) }
        var output: UnsafeMutableRawPointer?
        var length = 0
        let loaders = Int32(CVIPS_LOADER_JPEG | CVIPS_LOADER_PNG)
        let status = data.withUnsafeBytes { bytes -> Int32 in
            var status = cvips_render_thumbnail(render, nil, bytes.baseAddress, bytes.count, loaders,
                                                Int32(spec.width), Int32(spec.height), Int32(CVIPS_CROP_NONE))
            if status == Int32(CVIPS_OK) { status = cvips_render_srgb(render) }
            if status == Int32(CVIPS_OK) {
                let format = spec.format == .png ? CVIPS_FORMAT_PNG : CVIPS_FORMAT_JPEG
                status = cvips_render_save(render, Int32(format), Int32(spec.quality), 0, &output, &length)
            }
            return status
        }
        #expect(status == Int32(CVIPS_OK))
        let bytes = try #require(output)
        defer { cvips_free(bytes) }
        return Data(bytes: bytes, count: length)
    }

    /// Renders `source` with both renderers (libvips only, and the default
    /// one that tries the JPEG fast path first), one output and several from
    /// one decode: each within 2/255 of the colour-managed reference, which
    /// itself differs from the uncorrected render by more than 4/255 (so the
    /// check fails without colour management). None takes the fast path.
    func expectManaged(_ source: Data, _ what: String, spec: VariantSpec = spec) async throws {
        let reference = try SyntheticImage.managedThumbnail(source, width: spec.width, height: spec.height)
        let uncorrected = try Self.difference(reference, try Self.naive(source, spec: spec))
        #expect(uncorrected > 4, "\(what): the reference differs from the uncorrected render (\(uncorrected))")
        for renderer in [fast, vips] {
            let before = renderer.fastRenders
            let one = try await renderer.render(source, spec: spec)
            let several = try await renderer.render(source, specs: [spec, VariantSpec(width: 40, height: 40)])
            #expect(renderer.fastRenders == before, "\(what): a wide-gamut source is libvips'")
            for (output, path) in [(one, "one output"), (several[0], "one decode, two outputs")] {
                let difference = try Self.difference(output.data, reference)
                #expect(difference <= 2, "\(what), \(path), fastJPEG \(renderer.settings.fastJPEG): \(difference) from the reference")
                #expect(Fixtures.header(output.data)?.hasICCProfile == false, "\(what): the output carries no profile")
            }
        }
    }

    @Test(arguments: [SyntheticImage.ColourSpace.p3, .adobe])
    func wideGamutJPEGsAreConverted(space: SyntheticImage.ColourSpace) async throws {
        let jpeg = try SyntheticImage.tagged(space, suffix: ".jpg[Q=95]")
        let metadata = try #require(JPEGMetadata(jpeg))
        #expect(metadata.hasProfile && !metadata.profileIsSRGB)
        try await expectManaged(jpeg, "\(space) JPEG")
    }

    /// PNGs carry the profile in an iCCP chunk; a 16-bit one and one with
    /// an alpha band are converted too (that band is opaque here, so the
    /// PNG output drops it: issue 58, opaque alpha is not alpha).
    @Test(arguments: [(SyntheticImage.ColourSpace.p3, 8, false), (.adobe, 8, false), (.p3, 16, false), (.p3, 8, true)])
    func wideGamutPNGsAreConverted(space: SyntheticImage.ColourSpace, depth: Int, alpha: Bool) async throws {
        let png = try SyntheticImage.tagged(space, depth: depth, alpha: alpha, suffix: ".png")
        #expect(Fixtures.header(png)?.hasICCProfile == true)
        try await expectManaged(png, "\(depth)-bit \(space) PNG\(alpha ? " with alpha" : "")",
                                spec: alpha ? VariantSpec(width: 120, height: 120, format: .png) : Self.spec)
        if alpha {
            let rendered = try await vips.render(png, spec: VariantSpec(width: 120, height: 120, format: .png))
            let bands = try SyntheticImage.pixels(rendered.data).bands
            #expect(!rendered.hasAlpha && bands == 3)
        }
    }

    /// sRGB-tagged and untagged sources go through no colour transform: the
    /// libvips render is byte for byte the uncorrected one, and JPEGs still
    /// take the fast path.
    @Test(arguments: [SyntheticImage.ColourSpace.srgb, .none], [".jpg[Q=95]", ".png"])
    func srgbAndUntaggedSourcesAreUntouched(space: SyntheticImage.ColourSpace, suffix: String) async throws {
        let source = try SyntheticImage.tagged(space, suffix: suffix)
        #expect(Fixtures.header(source)?.hasICCProfile == (space == .srgb))
        let rendered = try await vips.render(source, spec: Self.spec)
        #expect(rendered.data == (try Self.naive(source)), "\(space) \(suffix): bit for bit as before")
        if suffix.hasPrefix(".jpg") {
            let before = fast.fastRenders
            _ = try await fast.render(source, spec: Self.spec)
            #expect(fast.fastRenders == before + 1, "\(space) JPEG: the fast path")
        }
    }

    /// CMYK JPEGs (libvips converts them with their profile, or its own CMYK
    /// profile) render as before: the CMYK profile left on the decode is not
    /// applied a second time.
    @Test func cmykJPEGsRenderAsBefore() async throws {
        var sources = [("CMYK with profile", try Fixtures.cmykJPEG(withProfile: true)),
                       ("CMYK without profile", try Fixtures.cmykJPEG(withProfile: false))]
        let corpusFile = Fixtures.corpus + "/images/jpeg/cmyk_adobe_pillow.jpg"
        if FileManager.default.fileExists(atPath: corpusFile) {
            sources.append(("cmyk_adobe_pillow.jpg", try Data(contentsOf: URL(fileURLWithPath: corpusFile))))
        }
        for (what, jpeg) in sources {
            let rendered = try await fast.render(jpeg, spec: Self.spec)
            #expect(rendered.data == (try Self.naive(jpeg)), "\(what): bit for bit as before")
        }
    }

    /// A profile split over several APP2 segments is put together in
    /// sequence order (here stored in reverse) before it is judged: an sRGB
    /// one keeps the fast path, a P3 one goes to libvips, which converts it.
    @Test func multiChunkProfilesAreReassembled() async throws {
        let srgb = try Self.splitProfile(try SyntheticImage.tagged(.srgb), chunk: 500, reversed: true)
        #expect(JPEGMetadata(srgb)?.profileIsSRGB == true)
        let before = fast.fastRenders
        _ = try await fast.render(srgb, spec: Self.spec)
        #expect(fast.fastRenders == before + 1)

        let p3 = try Self.splitProfile(try SyntheticImage.tagged(.p3), chunk: 100, reversed: false)
        let metadata = try #require(JPEGMetadata(p3))
        #expect(metadata.hasProfile && !metadata.profileIsSRGB)
        try await expectManaged(p3, "P3 JPEG, profile in 8 APP2 segments")
    }

    /// Real files: a 400 KB LUT profile in 7 APP2 segments, and jpegli's XYB
    /// (a profile with a perceptual table only). PNG outputs: photographs'
    /// JPEG noise would blur the comparison.
    @Test(.enabled(if: Fixtures.corpusExists), arguments: ["icc_profile_big_multi_app2", "xyb_jpegli_icc"])
    func corpusWideGamutJPEGs(name: String) async throws {
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: Fixtures.corpus + "/images/jpeg/\(name).jpg"))
        #expect(JPEGMetadata(jpeg)?.profileIsSRGB == false)
        try await expectManaged(jpeg, name, spec: VariantSpec(width: 120, height: 120, format: .png))
        // A JPEG output: the fast path still leaves it to libvips.
        let before = fast.fastRenders
        _ = try await fast.render(jpeg, spec: Self.spec)
        #expect(fast.fastRenders == before)
    }

    /// A contact sheet's cell of a P3 source has the converted colours: the
    /// 100 x 67 thumbnail centred in its 100 x 100 cell is within 2/255 of
    /// the colour-managed reference, which the uncorrected one is not.
    @Test func contactSheetCellsAreConverted() async throws {
        let source = try SyntheticImage.tagged(.p3)
        let box = VariantSpec(width: 100, height: 100, format: .png)
        let reference = try SyntheticImage.pixels(try SyntheticImage.managedThumbnail(source, width: 100, height: 100))
        let uncorrected = try SyntheticImage.pixels(try Self.naive(source, spec: box))
        let sheet = try SyntheticImage.pixels(try await vips.contactSheet([source], cell: 100, columns: 1))
        #expect(sheet.width == 100 && sheet.height == 100 && reference.width == 100)
        let top = (sheet.height - reference.height) / 2
        let cell = SyntheticImage.Pixels(width: reference.width, height: reference.height, bands: sheet.bands,
                                         bytes: Array(sheet.bytes[(top * sheet.width * sheet.bands)...]
                                            .prefix(reference.height * sheet.width * sheet.bands)))
        let corrected = try #require(cell.meanDifference(reference))
        let before = try #require(uncorrected.meanDifference(reference))
        #expect(corrected <= 2 && before > 4, "cell \(corrected), uncorrected \(before) from the reference")
    }

    /// Placeholders (ThumbHash and dominant colour) come from the same sRGB
    /// step: a P3 source's ThumbHash is close to that of the sRGB image it
    /// was made from, much closer than that of its P3 numbers read as sRGB
    /// (the profile removed).
    @Test func placeholdersAreConverted() throws {
        let p3 = try SyntheticImage.tagged(.p3)
        let managed = try vips.intrinsicsBlocking(p3).placeholder
        let original = try vips.intrinsicsBlocking(try SyntheticImage.tagged(.none)).placeholder
        let uncorrected = try vips.intrinsicsBlocking(try Self.splitProfile(p3, chunk: nil, reversed: false)).placeholder
        #expect(try fast.intrinsicsBlocking(p3).placeholder == managed, "the fast path leaves it to libvips")
        func distance(_ a: Placeholder, _ b: Placeholder) throws -> Double {
            let (x, y) = (try ThumbHash.decode(a.thumbHash), try ThumbHash.decode(b.thumbHash))
            guard x.rgba.count == y.rgba.count else { return 255 }
            return Double(zip(x.rgba, y.rgba).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(x.rgba.count * 3 / 4)
        }
        let (now, before) = (try distance(managed, original), try distance(uncorrected, original))
        // (ThumbHash quantises coarsely: measured 6.6 against 20.0.)
        #expect(now * 2 < before && before > 4, "ThumbHash: \(now) from the original's, uncorrected \(before)")
    }

    /// `jpeg` with its ICC profile rewritten as APP2 segments of at most
    /// `chunk` bytes each, in sequence order or reversed (nil: removed).
    static func splitProfile(_ jpeg: Data, chunk: Int?, reversed: Bool) throws -> Data {
        let bytes = [UInt8](jpeg)
        let signature = Array("ICC_PROFILE\0".utf8)
        var profile: [UInt8] = []
        var kept: [UInt8] = Array(bytes[0..<2])
        var index = 2, insertAt: Int?
        while index + 4 <= bytes.count, bytes[index] == 0xFF, bytes[index + 1] != 0xDA {
            let end = index + 2 + (Int(bytes[index + 2]) << 8 | Int(bytes[index + 3]))
            let body = Array(bytes[(index + 4)..<end])
            if bytes[index + 1] == 0xE2, body.starts(with: signature) {
                insertAt = insertAt ?? kept.count
                profile += body[14...]
            } else {
                kept += bytes[index..<end]
            }
            index = end
        }
        let at = try #require(insertAt, "the JPEG has a profile")
        guard let chunk else { return Data(kept + bytes[index...]) }
        let pieces = stride(from: 0, to: profile.count, by: chunk).map { Array(profile[$0..<min($0 + chunk, profile.count)]) }
        var segments: [[UInt8]] = pieces.enumerated().map { number, piece in
            let length = 2 + signature.count + 2 + piece.count
            return [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)] + signature
                + [UInt8(number + 1), UInt8(pieces.count)] + piece
        }
        if reversed { segments.reverse() }
        kept.insert(contentsOf: segments.flatMap { $0 }, at: at)
        return Data(kept + bytes[index...])
    }
}
