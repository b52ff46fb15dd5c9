@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCacheServer
@testable import ArtCacheServiceGrammar
import Foundation
import Hummingbird
import Testing

/// Priority classes through the service: `pri=` counts only in a signed
/// path; under overload a queued low request is shed (429) for a high one,
/// and an unsigned `pri=high` is a normal request.
@Suite("Thumbnail service, priority classes", .timeLimit(.minutes(3)))
struct ServicePriorityTests {
    /// The class of a signed path becomes the pipeline request's priority;
    /// the same options unsigned are normal, and a class changed after
    /// signing is a bad signature.
    @Test func theClassComesOnlyFromTheSignature() async throws {
        let s = try await ServiceHarness { $0.service.allowUnsigned = true }  // loopback: unsigned allowed, keys too
        let unsigned = ServiceURLSigner(keys: [])
        let source = s.origin.url("/img/a.jpg")
        for (options, expected) in [("40x40,pri=high", ImagePriority.high), ("40x40,pri=low", .low), ("40x40,pri=normal", .normal),
                                    ("40x40", .normal), ("original,pri=high", .high)] {
            let signed = s.signer.path(for: source, options: try ThumbnailOptions(parsing: options))
            #expect(try s.service.parse(path: signed, accept: nil).request.priority == expected, "\(options)")
            let open = unsigned.path(for: source, options: try ThumbnailOptions(parsing: options))
            #expect(open.hasPrefix("/unsafe/"))
            #expect(try s.service.parse(path: open, accept: nil).request.priority == .normal, "unsigned \(options)")
        }
        let low = s.signer.path(for: source, options: try ThumbnailOptions(parsing: "40x40,pri=low"))
        let forged = low.replacingOccurrences(of: "pri=low", with: "pri=high")
        #expect(forged != low)
        try await s.app().test(.router) { client in
            try await client.execute(uri: forged, method: .get) { response in
                #expect(response.status == .forbidden)
                #expect(response.headers[.artcacheError] == "bad_signature")
            }
            let bogus = "/40x40,pri=bogus/\(ServiceURLSigner.encodeSource(source))"  // signed, but not a class
            try await client.execute(uri: "/" + (s.signer.signature(for: bogus) ?? "") + bogus, method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(response.headers[.artcacheError] == "invalid_options")
            }
        }
        try await s.close()
    }

    /// One slot, a queue of one: a signed `pri=low` request waits in the
    /// queue; a signed `pri=high` one arrives and takes its place, and the
    /// low one is answered 429 at once (counted as shed, class low). The
    /// high one and the one in flight are served.
    @Test(.timeLimit(.minutes(3)))
    func aQueuedLowRequestIsShedForAHighOne() async throws {
        let s = try await ServiceHarness(live: true) {
            $0.service.maxInflight = 1
            $0.service.queue = 1
        }
        for name in ["a.jpg", "b.jpg", "c.jpg"] { try s.register(name) }
        try await s.app().test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            let first = Task { try await HTTPGet.get(base + (try s.path("/gate/a.jpg", "50x50"))) }
            await s.origin.waitForRequest("/gate/a.jpg")
            let low = Task { try await HTTPGet.get(base + (try s.path("/gate/b.jpg", "50x50,pri=low"))) }
            try await Self.waitForQueue(s, depth: 1)
            let high = Task { try await HTTPGet.get(base + (try s.path("/gate/c.jpg", "50x50,pri=high"))) }
            let shed = try await low.value  // answered before the gate opens: shed, not served
            #expect(shed.status == 429)
            #expect(shed.headers["x-artcache-error"] == "overloaded")
            #expect(shed.headers["retry-after"] == "1")
            #expect(s.service.admission.load == (1, 1), "the high one holds the place")
            s.origin.openGate()
            for (name, task) in [("high", high), ("first", first)] {
                let answer = try await task.value
                #expect(answer.status == 200, "\(name): \(answer.status) \(answer.headers["x-artcache-error"] ?? "")")
            }
            #expect(s.origin.requestCount("/gate/b.jpg") == 0 && s.origin.requestCount("/gate/c.jpg") == 1)
            let metrics = String(decoding: try await HTTPGet.get(base + "/metrics").body, as: UTF8.self)
            #expect(metrics.contains("artcache_shed_total{class=\"low\"} 1"), "\(metrics)")
            #expect(metrics.contains("artcache_shed_total{class=\"high\"} 0"), "present from the start, at 0")
        }
        try await s.close()
    }

    /// An unsigned `pri=high` is a normal request: it cannot shed a queued
    /// normal one and is itself refused (counted as normal); the queued one
    /// is served.
    @Test(.timeLimit(.minutes(3)))
    func anUnsignedHighClassShedsNothing() async throws {
        let s = try await ServiceHarness(live: true) {
            $0.service.maxInflight = 1
            $0.service.queue = 1
            $0.service.allowUnsigned = true
        }
        for name in ["a.jpg", "b.jpg", "d.jpg"] { try s.register(name) }
        try await s.app().test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            let first = Task { try await HTTPGet.get(base + (try s.path("/gate/a.jpg", "50x50"))) }
            await s.origin.waitForRequest("/gate/a.jpg")
            let normal = Task { try await HTTPGet.get(base + (try s.path("/gate/b.jpg", "50x50"))) }
            try await Self.waitForQueue(s, depth: 1)
            let unsigned = ServiceURLSigner(keys: []).path(for: s.origin.url("/gate/d.jpg"),
                                                           options: try ThumbnailOptions(parsing: "50x50,pri=high"))
            let refused = try await HTTPGet.get(base + unsigned)
            #expect(refused.status == 429)
            #expect(refused.headers["x-artcache-error"] == "overloaded")
            s.origin.openGate()
            for (name, task) in [("normal", normal), ("first", first)] {
                let answer = try await task.value
                #expect(answer.status == 200, "\(name): \(answer.status) \(answer.headers["x-artcache-error"] ?? "")")
            }
            #expect(s.origin.requestCount("/gate/d.jpg") == 0)
            let metrics = String(decoding: try await HTTPGet.get(base + "/metrics").body, as: UTF8.self)
            #expect(metrics.contains("artcache_shed_total{class=\"normal\"} 1"), "\(metrics)")
            #expect(metrics.contains("artcache_shed_total{class=\"high\"} 0"), "present from the start, at 0")
        }
        try await s.close()
    }

    /// Waits (an event, bounded by the test's time limit) until `depth`
    /// requests hold places in the service's queue.
    static func waitForQueue(_ s: ServiceHarness, depth: Int) async throws {
        await s.service.admission.waitUntilQueued(depth)
    }
}
