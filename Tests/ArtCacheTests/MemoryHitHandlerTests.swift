@testable import ArtCacheCore
@testable import ArtCacheServer
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@Suite("Memory hits in the channel pipeline", .timeLimit(.minutes(3)))
struct MemoryHitHandlerTests {
    @Test("A memory hit is answered before the router, as the router answers it: headers, ETag, 304, metrics")
    func hitsAreAnsweredInThePipeline() async throws {
        // An hour's cache_max_age, under the day the image is fresh for
        // (default_ttl): its answer does not count down, and is built once.
        let s = try await ServiceHarness(live: true) { $0.service.cacheMaxAge = 3600 }
        try s.register("a.jpg")
        try await s.app().test(.live) { live in try await PatientClient.with(port: live.port!) { client in
            let path = try s.path("/img/a.jpg", "40x40")
            let cold = try await client.execute(uri: path, method: .get)
            #expect(cold.status == .ok && cold.headers[.artcacheSource] == "network")
            #expect(s.service.channelHits.load(ordering: .relaxed) == 0)

            let hot = try await client.execute(uri: path, method: .get)
            #expect(hot.status == .ok && hot.headers[.artcacheSource] == "memory")
            #expect(s.service.channelHits.load(ordering: .relaxed) == 1)
            #expect(hot.body == cold.body)
            for field in [HTTPField.Name.eTag, .contentType, .cacheControl, .lastModified] {
                #expect(hot.headers[field] == cold.headers[field], "\(field)")
            }
            #expect(hot.headers[.server] == "artcache" && hot.headers[.date] != nil)
            #expect(hot.headers[.contentLength] == String(hot.body.readableBytes))

            let etag = try #require(hot.headers[.eTag])
            let revalidated = try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: etag])
            #expect(revalidated.status == .notModified && revalidated.body.readableBytes == 0)
            #expect(revalidated.headers[.eTag] == etag)
            #expect(s.service.channelHits.load(ordering: .relaxed) == 2)
            // Built once, reused: the 304 left the kept answer whole.
            let again = try await client.execute(uri: path, method: .get)
            #expect(again.status == .ok && again.body == cold.body)
            #expect(again.headers[.contentLength] == String(cold.body.readableBytes) && again.headers[.eTag] == etag)
            #expect(s.service.hitRoutes.count == 1)
            #expect(s.service.channelHits.load(ordering: .relaxed) == 3)

            // Not a valid signed path: still the router's typed refusal.
            let forged = "/" + String(repeating: "A", count: 43) + path.drop { $0 != "/" }.dropFirst().drop { $0 != "/" }
            let refused = try await client.execute(uri: forged, method: .get)
            #expect(refused.status == .forbidden && refused.headers[.artcacheError] == "bad_signature")

            let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains(#"artcache_images_total{tier="memory"} 3"#), "\(metrics)")
        } }
        #expect(s.origin.requestCount("/img/a.jpg") == 1)
        try await s.close()
    }

    /// Pipelined requests are answered in order: a hit behind a request
    /// still with the router waits for it (answered here, it would overtake).
    @Test("A hit pipelined behind a miss is answered after it")
    func pipelinedRequestsKeepTheirOrder() async throws {
        let s = try await ServiceHarness(live: true)
        try s.register("slow.jpg", width: 80, height: 60)
        try s.register("hot.jpg", width: 64, height: 48)
        try await s.app().test(.live) { client in
            let port = try #require(client.port)
            let hot = try s.path("/img/hot.jpg", "30x30")
            #expect(try await client.execute(uri: hot, method: .get).status == .ok)  // now in memory
            let slow = try s.path("/gate/slow.jpg", "30x30")
            let answers = Task.detached { try RawHTTP.pipelined(port: port, paths: [slow, hot, hot]) }
            await s.origin.waitForRequest("/gate/slow.jpg")
            s.origin.openGate()
            let responses = try await answers.value
            #expect(responses.map(\.status) == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK"])
            #expect(responses.map { $0.headers["x-artcache-source"] ?? "" } == ["network", "memory", "memory"])
        }
        try await s.close()
    }
}
