@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
@testable import ArtCacheStore
import Foundation
import Hummingbird
import Testing

/// `/metrics`' "where the time goes": `artcache_stage_seconds{stage}` counts
/// exactly the stages that ran, and the memory gauges (libvips, RSS).
@Suite("Service stage metrics", .timeLimit(.minutes(3)))
struct ServiceStageMetricsTests {
    @Test func aMissThenAMemoryHitCountTheirStages() async throws {
        let s = try await ServiceHarness()
        // A PNG: rendered by libvips (the JPEG fast path would bypass it).
        s.origin.register("a.png", .init(body: try Fixtures.image(width: 120, height: 90, bands: 4, suffix: ".png"),
                                         contentType: "image/png"))
        let path = try s.path("/img/a.png", "40x40,f=png")
        try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.artcacheSource] == "network")
            }
            // The original and the thumbnail are committed behind the answer: wait for both.
            await s.pipeline.store.waitForWritesBehind()
            let afterMiss = try await Self.scrape(client)
            #expect(afterMiss.count("admission") == 1)
            #expect(afterMiss.count("download") == 1)
            #expect(afterMiss.count("sniff_hash") == 1)
            #expect(afterMiss.count("render") == 1)
            #expect(afterMiss.count("store_commit") == 2, "the original and its thumbnail")
            #expect(afterMiss.count("answer") == 1)
            // Every series is there, with every bucket up to 10 s and +Inf = count.
            for stage in Stage.allCases {
                #expect(afterMiss.text.contains("artcache_stage_seconds_bucket{stage=\"\(stage.name)\",le=\"0.0001\"}"), "\(stage.name)")
                #expect(afterMiss.text.contains("artcache_stage_seconds_bucket{stage=\"\(stage.name)\",le=\"10.0\"}"), "\(stage.name)")
                #expect(afterMiss.value("artcache_stage_seconds_bucket{stage=\"\(stage.name)\",le=\"+Inf\"}")
                        == Double(afterMiss.count(stage.name) ?? -1))
            }
            #expect((afterMiss.value("artcache_stage_seconds_sum{stage=\"download\"}") ?? 0) > 0)

            // A memory hit: answered, nothing else ran.
            try await client.execute(uri: path, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.artcacheSource] == "memory")
            }
            let afterHit = try await Self.scrape(client)
            #expect(afterHit.count("answer") == 2)
            for stage in ["admission", "download", "sniff_hash", "render", "store_commit"] {
                #expect(afterHit.count(stage) == afterMiss.count(stage), "\(stage)")
            }

            // Memory: libvips rendered the PNG, so its high-water mark is above 0; the process is resident.
            let tracked = try #require(afterHit.value("artcache_vips_memory_bytes"))
            let highWater = try #require(afterHit.value("artcache_vips_memory_highwater_bytes"))
            #expect(highWater > 0)
            #expect(tracked >= 0 && tracked <= highWater)
            let resident = try #require(afterHit.value("process_resident_memory_bytes"))
            #expect(resident > 1_000_000, "\(resident) bytes resident")
        }
        try await s.close()
    }

    @Test func aDiskHitIsAdmittedButNotDownloaded() async throws {
        let s = try await ServiceHarness { $0.memory.maxBytes = 0 }
        try s.register("b.jpg")
        let path = try s.path("/img/b.jpg", "original")
        try await s.app().test(.router) { client in
            try await client.execute(uri: path, method: .get) { #expect($0.headers[.artcacheSource] == "network") }
            await s.pipeline.store.waitForWritesBehind()
            try await client.execute(uri: path, method: .get) { #expect($0.headers[.artcacheSource] == "disk") }
            let scraped = try await Self.scrape(client)
            #expect(scraped.count("admission") == 2)
            #expect(scraped.count("download") == 1)
            #expect(scraped.count("sniff_hash") == 1)
            #expect(scraped.count("render") == 0, "an original is not rendered")
            #expect(scraped.count("store_commit") == 1)
            #expect(scraped.count("answer") == 2)
        }
        try await s.close()
    }

    @Test func residentSetSizeFromStatm() {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let parsed = Array("12345 678 90 1 0 2 0\n".utf8).withUnsafeBufferPointer { ProcessMemory.residentBytes(statm: $0) }
        #expect(parsed == 678 * page)
        #expect(Array("garbage".utf8).withUnsafeBufferPointer { ProcessMemory.residentBytes(statm: $0) } == nil)
        #expect((ProcessMemory.residentBytes() ?? 0) > 0)
    }

    /// `/metrics`' text with lookups by series.
    struct Scrape {
        let text: String

        func value(_ series: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
        }

        func count(_ stage: String) -> Int? {
            value("artcache_stage_seconds_count{stage=\"\(stage)\"}").map { Int($0) }
        }
    }

    static func scrape(_ client: TestClient) async throws -> Scrape {
        try await client.execute(uri: "/metrics", method: .get) { response in
            #expect(response.status == .ok)
            return Scrape(text: String(buffer: response.body))
        }
    }
}
