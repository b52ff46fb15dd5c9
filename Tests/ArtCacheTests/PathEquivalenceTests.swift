import ArtCacheFixtures
@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Testing

/// Issue 58 §3: one request, one answer, whatever path serves it. For a
/// matrix of sources (plain JPEG, Display P3 JPEG, PNG with alpha, opaque
/// GIF, animated GIF, animated WebP, an undersized rendition) × clients
/// (`image/jpeg`, Chrome, Safari 17, Firefox, `*/*`) × `Save-Data` on/off,
/// the answer over every path — cold, after the upgrades behind it, a
/// memory hit, a keep-alive connection's second request (the raw hit
/// handler), HEAD, a disk hit after a restart, after a restart with the
/// memos churned (one entry each, no memory tier) — has the same
/// `Content-Type`, frames, `Vary`, `Cache-Control` class, and ETag for the
/// same bytes. Bytes differ only where an upgrade is documented: the cold
/// answer, classed "upgrading" (`max-age` ≤ 60), may be replaced by the
/// upgrade's final one. (The front cache of `scripts/scale-out` is checked
/// there: CI's scale-out step.)
@Suite("Path equivalence", .timeLimit(.minutes(5)))
struct PathEquivalenceTests {
    struct Source: Sendable {
        var name: String
        var path: String
        var body: Data
        var type: String
        /// Served from an undersized original (a provider profile whose
        /// larger rendition's transfer breaks): asked by the JPEG client and Chrome.
        var undersized = false
    }

    struct Client: Sendable, Hashable {
        var name: String
        var accept: String
    }

    /// What must be the same whatever the path.
    struct Answer: Equatable, Sendable, CustomStringConvertible {
        var status: Int
        var type: String?
        var vary: String?
        /// `no-store`, `upgrading` (`max-age` ≤ 60) or `final`.
        var lifetime: String
        var etag: String?
        var frames: Int?
        var still: String?
        var notKept: String?
        /// SHA-256 of the body (nil for HEAD).
        var digest: String?

        var description: String {
            "\(status) \(type ?? "-") vary=\(vary ?? "-") \(lifetime) etag=\(etag ?? "-") frames=\(frames.map(String.init) ?? "-")"
                + " still=\(still ?? "-") notKept=\(notKept ?? "-") body=\(digest?.prefix(12) ?? "-")"
        }

        /// The same answer but for the body (a HEAD's).
        func sameHead(_ other: Answer) -> Bool {
            var a = self, b = other
            (a.digest, b.digest, a.frames, b.frames) = (nil, nil, nil, nil)
            return a == b
        }
    }

    struct Case: Hashable, Sendable, CustomStringConvertible {
        var source: String
        var client: Client
        var saveData: Bool
        var path: String
        var description: String { "\(source) × \(client.name)\(saveData ? " × Save-Data" : "")" }

        var headers: HTTPFields {
            var fields: HTTPFields = [.accept: client.accept]
            if saveData { fields[HTTPField.Name.saveData] = "on" }
            return fields
        }
    }

    static let clients = [Client(name: "JPEG client", accept: "image/jpeg"), Client(name: "Chrome", accept: FormatPolicyTests.chrome),
                          Client(name: "Safari 17", accept: FormatPolicyTests.safari17),
                          Client(name: "Firefox", accept: FormatPolicyTests.firefox), Client(name: "*/*", accept: "*/*")]

    static func answer(status: Int, headers: HTTPFields, body: Data?) -> Answer {
        let control = headers[.cacheControl] ?? ""
        let maxAge = control.range(of: "max-age=").flatMap { Int(control[$0.upperBound...].prefix { $0.isNumber }) }
        let lifetime = control.contains("no-store") ? "no-store" : (maxAge ?? 0) <= Int(ThumbnailService.upgradingMaxAge)
            ? "upgrading" : "final"
        let digest = body.map(ThumbnailService.digest)
        return Answer(status: status, type: headers[.contentType], vary: headers[.vary], lifetime: lifetime, etag: headers[.eTag],
                      frames: body.flatMap { Fixtures.header($0)?.frames }, still: headers[.artcacheStill],
                      notKept: headers[.artcacheNotKept], digest: digest)
    }

    static func sources(_ s: ServiceHarness) throws -> [Source] {
        let sources = [
            Source(name: "plain JPEG", path: "/img/plain.jpg", body: try SyntheticImage.zonePlateJPEG(width: 400, height: 400, quality: 90),
                   type: "image/jpeg"),
            Source(name: "Display P3 JPEG", path: "/img/p3.jpg", body: try SyntheticImage.tagged(.p3, width: 400, height: 300),
                   type: "image/jpeg"),
            Source(name: "PNG with alpha", path: "/img/alpha.png", body: try Fixtures.image(width: 300, height: 200, bands: 4, suffix: ".png"),
                   type: "image/png"),
            Source(name: "opaque GIF", path: "/img/opaque.gif", body: try Fixtures.image(width: 300, height: 200, suffix: ".gif"),
                   type: "image/gif"),
            Source(name: "animated GIF", path: "/img/anim.gif",
                   body: try SyntheticImage.animation(width: 200, height: 200, delays: [100, 200, 300], webp: false), type: "image/gif"),
            Source(name: "animated WebP", path: "/img/anim.webp",
                   body: try SyntheticImage.animation(width: 200, height: 200, delays: [100, 200, 300], webp: true), type: "image/webp"),
            Source(name: "undersized rendition", path: "/img/u60x60bb.jpg",
                   body: try Fixtures.image(width: 60, height: 60, suffix: ".jpg"), type: "image/jpeg", undersized: true),
        ]
        for source in sources {
            let name = String(source.path.split(separator: "/").last!)
            s.origin.register(name, .init(body: source.body, contentType: source.type, cacheControl: "max-age=86400"))
        }
        // The larger rendition of the undersized source: its transfer breaks (a network failure), every time.
        var broken = OriginServer.Resource(body: try Fixtures.image(width: 120, height: 120, suffix: ".jpg"), contentType: "image/jpeg",
                                           cacheControl: "max-age=86400")
        broken.cutShort = true
        s.origin.register("u120x120bb.jpg", broken)
        return sources
    }

    static func cases(_ s: ServiceHarness, _ sources: [Source]) throws -> [Case] {
        var cases: [Case] = []
        for source in sources {
            // The undersized source is first stored at 60 px (below), then asked at 120.
            let path = try s.path(source.path, source.undersized ? "120x120" : "100x100,fit=cover")
            let clients = source.undersized ? [clients[0], clients[1]] : clients
            for client in clients {
                for saveData in source.undersized ? [false] : [false, true] {
                    cases.append(Case(source: source.name, client: client, saveData: saveData, path: path))
                }
            }
        }
        return cases
    }

    static func configure(_ configuration: inout Configuration) {
        // iTunes-style `{W}x{H}bb` names on the loopback origin (the other sources' names have none).
        try! configuration.profiles.set("loopback", line: "hosts=127.0.0.1 path=/img/ size=dimensions max=1000")
        configuration.download.retries = 0
    }

    @Test func oneRequestOneAnswerWhateverThePath() async throws {
        let s = try await ServiceHarness(live: true, Self.configure)
        let sources = try Self.sources(s)
        let cases = try Self.cases(s, sources)
        let final = try await s.app().test(.live) { live -> [Case: Answer] in
            let client = live
            var final: [Case: Answer] = [:]
            // The undersized source's original, stored at 60 px.
            try await client.execute(uri: try s.path("/img/u60x60bb.jpg", "60x60"), method: .get) { #expect($0.status == .ok) }
            await s.harness.store.waitForWritesBehind()
            var cold: [Case: Answer] = [:]
            for c in cases {
                cold[c] = try await client.execute(uri: c.path, method: .get, headers: c.headers) {
                    Self.answer(status: $0.status.code, headers: $0.headers, body: Data(buffer: $0.body))
                }
            }
            await s.pipeline.waitForUpgrades()
            await s.harness.store.waitForWritesBehind()
            for c in cases {
                let answer = try await client.execute(uri: c.path, method: .get, headers: c.headers) {
                    Self.answer(status: $0.status.code, headers: $0.headers, body: Data(buffer: $0.body))
                }
                final[c] = answer
                let first = try #require(cold[c])
                #expect(answer.status == 200 && answer.lifetime != "upgrading", "\(c): final after the upgrades: \(answer)")
                #expect(first.vary == answer.vary && first.notKept == answer.notKept, "\(c): cold \(first) / final \(answer)")
                if first.lifetime != "upgrading" {
                    #expect(first == answer, "\(c): nothing was behind the cold answer: cold \(first) / final \(answer)")
                }
                #expect(answer.frames == first.frames, "\(c): an upgrade never changes the frames: \(first) / \(answer)")
            }
            Self.expectRules(final)
            await s.pipeline.waitForUpgrades()
            // A memory hit (a new connection each), then a keep-alive connection's second request, then HEAD.
            for c in cases {
                let again = try await client.execute(uri: c.path, method: .get, headers: c.headers) {
                    Self.answer(status: $0.status.code, headers: $0.headers, body: Data(buffer: $0.body))
                }
                #expect(again == final[c], "\(c): memory \(again) / final \(final[c]!)")
                let kept = try await PatientClient.with(port: live.port!) { patient in
                    _ = try await patient.execute(uri: c.path, headers: c.headers)
                    let second = try await patient.execute(uri: c.path, headers: c.headers)
                    return Self.answer(status: second.status.code, headers: second.headers, body: Data(buffer: second.body))
                }
                #expect(kept == final[c], "\(c): keep-alive \(kept) / final \(final[c]!)")
                let head = try await client.execute(uri: c.path, method: .head, headers: c.headers) {
                    Self.answer(status: $0.status.code, headers: $0.headers, body: nil)
                }
                #expect(head.sameHead(final[c]!), "\(c): HEAD \(head) / final \(final[c]!)")
            }
            return final
        }
        await s.pipeline.waitForUpgrades()
        await s.harness.store.waitForWritesBehind()
        try await s.close()
        // A restart, then a restart with every memo one entry and no memory tier.
        for churned in [false, true] {
            let (pipeline, service) = try await s.restarted { configuration in
                if churned {
                    configuration.memory.memoEntries = 1
                    configuration.memory.maxEntries = 0
                }
            }
            try await buildApplication(service: service).test(.router) { client in
                for round in 1...2 {
                    for c in cases {
                        let answer = try await client.execute(uri: c.path, method: .get, headers: c.headers) {
                            Self.answer(status: $0.status.code, headers: $0.headers, body: Data(buffer: $0.body))
                        }
                        #expect(answer == final[c], "\(c) after a restart\(churned ? ", memos churned" : ""), round \(round): \(answer) / \(final[c]!)")
                    }
                }
            }
            await pipeline.waitForUpgrades()
            #expect((pipeline.background.counts[.formatUpgrade]?.finished ?? 0) == 0, "nothing was upgraded again")
            try await pipeline.close()
        }
        for source in sources where !source.undersized {
            #expect(s.origin.requestCount(source.path) == 1, "\(source.name): one origin request in all")
        }
    }

    /// The rules the final answers follow, whatever their path: every
    /// negotiated answer says `Vary: Accept, Save-Data`; a tagged source is
    /// answered as an untagged one; an opaque GIF is a JPEG to a JPEG
    /// client; an animated source stays animated for every client that
    /// takes WebP; an undersized answer is not kept.
    static func expectRules(_ answers: [Case: Answer]) {
        for (c, answer) in answers {
            #expect(answer.vary == "Accept, Save-Data", "\(c)")
            switch c.source {
            case "opaque GIF", "plain JPEG", "Display P3 JPEG":
                if c.client.name == "JPEG client" { #expect(answer.type == "image/jpeg", "\(c): \(answer)") }
            case "PNG with alpha":
                #expect(answer.type != "image/jpeg", "\(c): alpha is kept: \(answer)")
            case "animated GIF", "animated WebP":
                if c.client.name == "JPEG client" || c.client.name == "*/*" {
                    #expect(answer.frames == 1, "\(c): \(answer)")
                } else {
                    #expect(answer.type == "image/webp" && (answer.frames ?? 0) == 3, "\(c): \(answer)")
                }
            case "undersized rendition":
                #expect(answer.lifetime == "no-store" && answer.notKept == "undersized", "\(c): \(answer)")
            default:
                break
            }
            if c.source != "undersized rendition" { #expect(answer.lifetime == "final" && answer.notKept == nil, "\(c): \(answer)") }
        }
    }
}
