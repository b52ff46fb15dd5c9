import ArtCacheOrigin
import Foundation
import Testing
@testable import ArtCache

/// SVG is rasterised only when enabled; the loader switch is process-wide, so
/// these run the built binary with `ARTCACHE_THUMBNAILS_ALLOW_SVG`.
@Suite("SVG rendering", .timeLimit(.minutes(2)))
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
        let off = try CLI.run(["render-files", svg, "--size", "50x50", "--cache-dir", dir.file("c")])
        #expect(off.stdout.contains("error SVG: rendering SVG is not enabled"), "\(off.stdout)")
        let on = try CLI.run(["render-files", svg, "--size", "50x50", "--cache-dir", dir.file("c")],
                             environment: ["ARTCACHE_THUMBNAILS_ALLOW_SVG": "true"])
        #expect(on.stdout.contains("ok 50x25"), "\(on.stdout) \(on.stderr)")
        #expect(origin.totalRequests == 0)  // external references are never fetched
        // A huge declared canvas is refused from the header like any bomb.
        let huge = dir.write("huge.svg", #"<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"/>"#)
        let bomb = try CLI.run(["render-files", huge, "--size", "50x50", "--cache-dir", dir.file("c")],
                               environment: ["ARTCACHE_THUMBNAILS_ALLOW_SVG": "true"])
        #expect(bomb.stdout.contains("too large"), "\(bomb.stdout)")
    }
}
