@testable import ArtCacheCore
import ArtCacheOrigin
import Foundation
import Testing

/// `prefetch --json`'s `stages`: per stage the run went through, its count
/// and percentiles in seconds, beside the summary's fields (unchanged).
@Suite("prefetch --json stages", .timeLimit(.minutes(3)))
struct PrefetchStagesCLITests {
    @Test func stagesOfAColdRunThenAWarmOne() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let jpeg = try Fixtures.image(width: 400, height: 300, suffix: ".jpg")
        for name in ["1.jpg", "2.jpg", "3.jpg"] { origin.register(name, .init(body: jpeg, contentType: "image/jpeg")) }
        let urls = dir.write("urls.txt", ["1.jpg", "2.jpg", "3.jpg"].map { origin.url("/img/\($0)") }.joined(separator: "\n") + "\n")
        let cache = dir.file("cache")

        let cold = try await CLI.json(["prefetch", urls, "--cache-dir", cache, "--json"])
        #expect(cold["downloaded"] as? Int == 3)
        #expect(cold["variants"] as? Int == 6)  // 100x100 and 300x300 each
        // The stable fields are all still there.
        for key in ["bytes", "cached", "downloaded", "failed", "failures", "refused", "repaired", "requested",
                    "revalidated", "seconds", "uncacheable"] {
            #expect(cold[key] != nil, "missing \(key)")
        }
        let stages = try #require(cold["stages"] as? [String: [String: Any]])
        #expect(Set(stages.keys) == ["download", "sniff_hash", "render", "store_commit"])
        #expect(stages["download"]?["count"] as? Int == 3)
        #expect(stages["sniff_hash"]?["count"] as? Int == 3)
        #expect(stages["render"]?["count"] as? Int == 3, "both sizes of an original from one decode")
        #expect(stages["store_commit"]?["count"] as? Int == 9, "3 originals and 6 thumbnails")
        for (name, stage) in stages {
            let values = try ["p50", "p90", "p99", "max"].map { key in try #require(stage[key] as? Double, "\(name).\(key)") }
            #expect(values[0] > 0, "\(name)")
            #expect(values == values.sorted(), "\(name): p50 <= p90 <= p99 <= max: \(values)")
            #expect(values[3] < 60, "\(name)")
        }

        // All cached: nothing downloaded, rendered or stored; null percentiles, same keys.
        let warm = try await CLI.json(["prefetch", urls, "--cache-dir", cache, "--json"])
        #expect(warm["cached"] as? Int == 3)
        let idle = try #require(warm["stages"] as? [String: [String: Any]])
        #expect(Set(idle.keys) == ["download", "sniff_hash", "render", "store_commit"])
        for (name, stage) in idle {
            #expect(stage["count"] as? Int == 0, "\(name)")
            for key in ["p50", "p90", "p99", "max"] { #expect(stage[key] is NSNull, "\(name).\(key)") }
        }
    }
}
