import ArtCacheCore
import ArtCacheFixtures
import Foundation
import Testing
@testable import ArtCacheRender

/// TIFFs libvips reads in ways a thumbnail must not inherit (issue 36, item 6):
/// a sub-IFD pyramid is thumbnailed from its full-size image, and integer
/// samples wider than 8 bits (signed, 16 and 32) are scaled, not clipped.
@Suite("TIFF variants")
struct TIFFVariantTests {
    let renderer = Renderer(settings: Fixtures.thumbnails { _ in })
    static let spec = VariantSpec(width: 100, height: 100, format: .png)

    /// The same gradient as an 8-bit PNG, through the same renderer.
    func reference() async throws -> SyntheticImage.Pixels {
        let png = try SyntheticImage.make(width: 400, height: 300, bands: 3, suffix: ".png")
        return try SyntheticImage.pixels(try await renderer.render(png, spec: Self.spec).data)
    }

    @Test func aSubIFDPyramidIsThumbnailedFromItsFullSizeImage() async throws {
        let tiff = try SyntheticImage.tiff(.subIFDPyramid)
        let rendered = try await renderer.render(tiff, spec: Self.spec)
        // libvips' own thumbnail picks the smallest level (50x37 here) and never enlarges it.
        #expect((rendered.width, rendered.height) == (100, 75))
        let difference = try #require(try SyntheticImage.pixels(rendered.data).meanDifference(try await reference()))
        #expect(difference <= 2, "\(difference) from the 8-bit PNG's thumbnail")
    }

    @Test(arguments: [SyntheticImage.TIFFKind.unsigned16, .signed16, .unsigned32, .signed32])
    func widerIntegersAreScaledNotClipped(kind: SyntheticImage.TIFFKind) async throws {
        let tiff = try SyntheticImage.tiff(kind)
        let rendered = try await renderer.render(tiff, spec: Self.spec)
        #expect((rendered.width, rendered.height) == (100, 75))
        let difference = try #require(try SyntheticImage.pixels(rendered.data).meanDifference(try await reference()))
        #expect(difference <= 2, "\(kind): \(difference) from the 8-bit PNG's thumbnail")
    }

    /// Issue 49 item 9: a multi-page OME-TIFF (pages under an OME-XML
    /// ImageDescription, as libvips' `multi-channel-z-series.ome.tif`) is
    /// thumbnailed from page 0, like every other multi-page TIFF: not the
    /// pages stacked, not another page.
    @Test func aMultiPageOMETIFFRendersPageZero() async throws {
        let tiff = try SyntheticImage.tiff(.omeMultiPage)
        let header = try renderer.header(of: tiff)
        #expect((header.width, header.height) == (400, 300), "page 0's size")
        let rendered = try await renderer.render(tiff, spec: Self.spec)
        #expect((rendered.width, rendered.height) == (100, 75))
        let difference = try #require(try SyntheticImage.pixels(rendered.data).meanDifference(try await reference()))
        #expect(difference <= 2, "page 0 (the gradient), not page 1 (its negative): \(difference)")
    }
}
