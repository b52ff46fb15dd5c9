import ArtCacheCore
import Testing
@testable import ArtCacheRender

/// The fit math and format choice, decided in Swift before libvips is
/// called: known answers.
@Suite("Render plan")
struct RenderPlanTests {
    @Test func scaleFitsInsideOrFillsAndNeverEnlarges() {
        let contain = VariantSpec(width: 100, height: 100, fit: .contain)
        let cover = VariantSpec(width: 100, height: 100, fit: .cover)
        #expect(RenderPlan.scale(width: 600, height: 300, into: contain) == 100.0 / 600)
        #expect(RenderPlan.scale(width: 600, height: 300, into: cover) == 100.0 / 300)
        #expect(RenderPlan.scale(width: 600, height: 300, into: VariantSpec(width: 100, height: 100, fit: .smart)) == 100.0 / 300)
        #expect(RenderPlan.scale(width: 50, height: 40, into: cover) == 1)
        #expect(RenderPlan.scale(width: 0, height: 0, into: contain) == 1)
    }

    @Test func oneDecodeCoversTheMostDemandingOutput() {
        let specs = [VariantSpec(width: 100, height: 100), VariantSpec(width: 300, height: 300, fit: .cover)]
        // 1200x600: contain 100 needs 1/12, cover 300 needs 1/2 → 600x300.
        #expect(RenderPlan.decodeBox(width: 1200, height: 600, specs: specs) == (600, 300))
        // Never larger than the source.
        #expect(RenderPlan.decodeBox(width: 200, height: 100, specs: specs) == (200, 100))
        // Rounded up, at least 1x1.
        #expect(RenderPlan.decodeBox(width: 1001, height: 1, specs: [VariantSpec(width: 10, height: 10)]) == (10, 1))
        #expect(RenderPlan.decodeBox(width: 999, height: 333, specs: [VariantSpec(width: 10, height: 10)]) == (10, 4))
    }

    @Test func cropsOnlyWhatCoverAndSmartNeed() {
        let cover = VariantSpec(width: 100, height: 100, fit: .cover)
        #expect(RenderPlan.crop(width: 200, height: 100, spec: cover)! == (100, 100, .centre))
        #expect(RenderPlan.crop(width: 100, height: 100, spec: cover) == nil)
        #expect(RenderPlan.crop(width: 60, height: 40, spec: cover) == nil)  // smaller than the box: kept whole
        #expect(RenderPlan.crop(width: 150, height: 40, spec: VariantSpec(width: 100, height: 100, fit: .smart))! == (100, 40, .attention))
        #expect(RenderPlan.crop(width: 200, height: 100, spec: VariantSpec(width: 100, height: 100, fit: .contain)) == nil)
    }

    @Test func formatAndFlattening() {
        #expect(RenderPlan.outputFormat(.auto, hasAlpha: true) == .png)
        #expect(RenderPlan.outputFormat(.auto, hasAlpha: false) == .jpeg)
        #expect(RenderPlan.outputFormat(.webp, hasAlpha: true) == .webp)
        #expect(RenderPlan.flattens(.jpeg, hasAlpha: true))
        #expect(!RenderPlan.flattens(.png, hasAlpha: true))
        #expect(!RenderPlan.flattens(.jpeg, hasAlpha: false))
        #expect(RenderPlan.upright(width: 600, height: 400, orientation: 6) == (400, 600))
        #expect(RenderPlan.upright(width: 600, height: 400, orientation: 3) == (600, 400))
    }
}
