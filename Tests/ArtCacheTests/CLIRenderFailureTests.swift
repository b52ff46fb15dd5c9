@testable import ArtCacheCore
import ArtCacheOrigin
import Foundation
import Testing

/// Issue 49, item 7: render failures are named (URL, size, reason) and
/// remembered per (source, spec) for `[download] negative_ttl`, so the next
/// prefetch does not decode the image again. The built binary, a loopback origin.
@Suite("artcache CLI: render failures", .timeLimit(.minutes(1)))
struct CLIRenderFailureTests {
    @Test func renderFailuresAreNamedAndRemembered() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let png = try Fixtures.image(width: 200, height: 200, suffix: ".png")
        origin.register("cut.png", .init(body: png.prefix(png.count / 3), contentType: "image/png"))  // a PNG that does not decode
        origin.register("good.jpg", .init(body: try Fixtures.image(suffix: ".jpg"), contentType: "image/jpeg"))
        let (cut, good) = (origin.url("/img/cut.png"), origin.url("/img/good.jpg"))
        let list = dir.write("u.txt", "\(cut)\n\(good)\n")
        let cache = dir.file("cache")
        let environment = ["ARTCACHE_THUMBNAILS_SIZES": "40x40,64x32"]
        func prefetch() async throws -> [String: Any] {
            let run = try await CLI.run(["prefetch", list, "--json", "--cache-dir", cache], environment: environment)
            #expect(run.status == 0, "render failures are reported, not fatal: \(run.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
        }
        func renders(_ report: [String: Any]) -> Int? { ((report["stages"] as? [String: Any])?["render"] as? [String: Any])?["count"] as? Int }

        let first = try await prefetch()
        #expect(first["render_failures"] as? [String: Int] == ["render_decode": 2], "\(first)")
        let failed = try #require(first["failed_renders"] as? [[String: Any]], "\(first)")
        #expect(failed.map { $0["url"] as? String } == [cut, cut])
        #expect(failed.map { $0["size"] as? String } == ["40x40", "64x32"])
        #expect(failed.allSatisfy { $0["reason"] as? String == "render_decode" && !(($0["message"] as? String) ?? "").isEmpty })
        #expect((renders(first) ?? 0) >= 1, "\(first)")

        // The next prefetch answers the failures from memory: no render at all.
        let second = try await prefetch()
        #expect(second["cached"] as? Int == 2)
        #expect(second["render_failures"] as? [String: Int] == ["render_decode": 2], "\(second)")
        #expect((second["failed_renders"] as? [[String: Any]])?.map { $0["size"] as? String } == ["40x40", "64x32"])
        #expect(renders(second) == 0, "decoded again: \(second)")

        // The text summary lists them too; `purge --failures` forgets them and the next prefetch tries again.
        let text = try await CLI.run(["prefetch", list, "--cache-dir", cache], environment: environment)
        #expect(text.stdout.contains("\(cut) 40x40: render_decode") && text.stdout.contains("\(cut) 64x32: render_decode"),
                "\(text.stdout)")
        let purge = try await CLI.run(["purge", "--failures", "--cache-dir", cache])
        #expect(purge.status == 0, "\(purge.stderr)")
        #expect(renders(try await prefetch()) ?? 0 >= 1, "tried again once forgotten")
    }
}
