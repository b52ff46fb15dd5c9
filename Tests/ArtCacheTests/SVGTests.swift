@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// SVG is rasterised only when the renderer's own settings enable it: two
/// renderers with different settings live in one process, and each decides
/// per render (libvips is started once, whoever comes first).
@Suite("SVG rendering", .timeLimit(.minutes(3)))
struct SVGTests {
    @Test func offByDefaultOnWhenEnabledAndNeverFetchesReferences() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        origin.register("x.png", .init(body: try Fixtures.image(suffix: ".png"), contentType: "image/png"))
        let svg = dir.write("a.svg", """
            <svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="200" height="100">
              <rect width="200" height="100" fill="#3366cc"/>
              <image href="\(origin.url("/img/x.png"))" xlink:href="\(origin.url("/img/x.png"))" width="50" height="50"/>
              <use href="\(origin.url("/img/x.png"))#frag"/>
            </svg>
            """)
        let off = Renderer(settings: Fixtures.thumbnails { $0.allowSVG = false })
        let on = Renderer(settings: Fixtures.thumbnails { $0.allowSVG = true })
        let spec = VariantSpec(width: 50, height: 50)
        let data = try Data(contentsOf: URL(fileURLWithPath: svg))
        for _ in 0..<2 {  // in either order, each renderer keeps its own rule
            let refused = await #expect(throws: RenderError.self) { try await off.render(data, spec: spec) }
            #expect(refused?.code == .unsupported)
            #expect(refused?.message == "SVG: rendering SVG is not enabled")
            let image = try await on.render(data, spec: spec)
            #expect((image.width, image.height) == (50, 25))
        }
        #expect(origin.totalRequests == 0)  // external references are never fetched
        // A huge declared canvas is refused from the header like any bomb.
        let huge = Data(#"<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"/>"#.utf8)
        let bomb = await #expect(throws: RenderError.self) { try await on.render(huge, spec: spec) }
        #expect(bomb?.code == .tooLarge)
    }
}
