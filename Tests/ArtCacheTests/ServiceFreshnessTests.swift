@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCacheServer
@testable import ArtCacheStore
import Foundation
import Hummingbird
import Testing

/// The service's caching headers follow the original's freshness (issue 22).
@Suite("Service freshness", .timeLimit(.minutes(3)))
struct ServiceFreshnessTests {
    /// A client whose copy expired gets the stored thumbnail at once (stale,
    /// `max-age=0`: its If-None-Match still matches) while the origin is
    /// asked behind; the origin's new bytes then reach it with a new ETag.
    @Test func aChangedImageReachesAClientWhoseCopyExpired() async throws {
        let s = try await ServiceHarness()
        s.origin.register("a.jpg", .init(body: FreshnessTests.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: "\"v1\""))
        let path = try s.path("/img/a.jpg", "50x50,f=jpeg")
        try await s.app().test(.router) { client in
            let etag = try await client.execute(uri: path, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == "public, max-age=0, stale-while-revalidate=86400")
                return try #require(response.headers[.eTag])
            }
            s.origin.register("a.jpg", .init(body: FreshnessTests.otherJPEG, contentType: "image/jpeg", cacheControl: "max-age=3600",
                                             etag: "\"v2\""))
            try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: etag]) { response in
                #expect(response.status == .notModified)
                #expect(response.headers[.artcacheSource] == "stale")
                #expect(response.headers[.cacheControl] == "public, max-age=0, stale-while-revalidate=86400")
            }
            await s.pipeline.waitForRevalidations()
            try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: etag]) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.eTag] != nil && response.headers[.eTag] != etag)
                #expect(response.headers[.artcacheSource] == "disk")  // rendered from the new original, fresh
                // The new original's freshness left: an hour, less the test's seconds.
                let maxAge = response.headers[.cacheControl]?.split(separator: ",")
                    .first { $0.hasPrefix(" max-age=") }.flatMap { Int($0.dropFirst(" max-age=".count)) }
                #expect((3500...3600).contains(maxAge ?? -1), "\(String(describing: response.headers[.cacheControl]))")
            }
            // /metrics: revalidations by outcome, stale answers by cause.
            let metrics = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
            #expect(metrics.contains("artcache_revalidations_total{outcome=\"200\"} 1"), "\(metrics)")
            #expect(metrics.contains("artcache_revalidations_total{outcome=\"304\"} 0"))
            #expect(metrics.contains("artcache_stale_answers_total{cause=\"while_revalidate\"} 1"))
            #expect(metrics.contains("artcache_images_total{tier=\"stale\"} 1"))
            // The revalidation ran as a background job (issue 34): one finished, none left.
            #expect(metrics.contains("artcache_background_jobs{kind=\"revalidation\",state=\"queued\"} 0"), "\(metrics)")
            #expect(metrics.contains("artcache_background_jobs{kind=\"revalidation\",state=\"running\"} 0"))
            #expect(metrics.contains("artcache_background_dropped_total{kind=\"revalidation\"} 0"))
            #expect(metrics.contains("artcache_background_seconds_count{kind=\"revalidation\"} 1"))
            #expect(metrics.contains("artcache_background_queued_bytes 0"))
        }
        #expect(s.origin.requestCount("/img/a.jpg") == 2)
        try await s.close()
    }

    /// `max-age` is the freshness left (capped by cache_max_age);
    /// `immutable` and `must-revalidate` only when the origin said so; errors
    /// and fallbacks stay `no-store`.
    @Test func cacheControlIsTheOriginsFreshnessLeft() async throws {
        let s = try await ServiceHarness { $0.service.cacheMaxAge = 300 }
        let rules = ["f.jpg": "max-age=600, immutable", "m.jpg": "max-age=120, must-revalidate", "w.jpg": "max-age=60, stale-while-revalidate=5"]
        for (name, cacheControl) in rules {
            s.origin.register(name, .init(body: FreshnessTests.jpeg, contentType: "image/jpeg", cacheControl: cacheControl))
        }
        try await s.app().test(.router) { client in
            func cacheControl(_ name: String) async throws -> String? {
                try await client.execute(uri: try s.path("/img/" + name, "40x40"), method: .get) { $0.headers[.cacheControl] }
            }
            #expect(try await cacheControl("f.jpg") == "public, max-age=300, stale-while-revalidate=300, immutable")
            // The freshness left counts down while the test runs: max-age within 30 s of the origin's.
            let must = Self.directives(try await cacheControl("m.jpg"))
            #expect((90...120).contains(must.maxAge) && must.rest == ["public", "must-revalidate"], "\(must)")
            let window = Self.directives(try await cacheControl("w.jpg"))
            #expect((30...60).contains(window.maxAge) && window.rest == ["public", "stale-while-revalidate=5"], "\(window)")
            try await client.execute(uri: try s.path("/status/404", "40x40"), method: .get) { response in
                #expect(response.status.code >= 400)
                #expect(response.headers[.cacheControl] == "no-store")
            }
        }
        try await s.close()
    }

    /// `max-age`'s value (-1 when absent) and the other directives in order.
    static func directives(_ header: String?) -> (maxAge: Int, rest: [String]) {
        let parts = (header ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let maxAge = parts.first { $0.hasPrefix("max-age=") }.flatMap { Int($0.dropFirst("max-age=".count)) } ?? -1
        return (maxAge, parts.filter { !$0.hasPrefix("max-age=") })
    }
}
