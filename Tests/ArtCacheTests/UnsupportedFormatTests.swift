@testable import ArtCacheCore
import ArtCacheFixtures
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheStore
import Foundation
import Testing

/// Images in formats artcache does not take (PSD, JPEG 2000, TGA, QOI) are
/// `unsupported`, not `not_an_image`, and the negative cache does not
/// remember them as "not an image" (issue 36, item 6).
@Suite("Unsupported image formats", .timeLimit(.minutes(2)))
struct UnsupportedFormatTests {
    static let bodies: [(String, Data)] = [
        ("a.qoi", Data("qoif".utf8) + Data([0, 0, 0, 2, 0, 0, 0, 2, 3, 0]) + Data(count: 16)),
        ("a.jp2", Data([0, 0, 0, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) + Data(count: 32)),
        ("a.psd", Data("8BPS".utf8) + Data([0, 1, 0, 0, 0, 0, 0, 0]) + Data(count: 32)),
    ]

    @Test func anImageInAFormatNotTakenIsUnsupportedAndNotRemembered() async throws {
        let h = try await LoopbackHarness { $0.download.retries = 0 }
        defer { h.origin.stop() }
        for (name, body) in Self.bodies {
            h.origin.register(name, .init(body: body, contentType: "image/png", cacheControl: "max-age=3600"))
            for attempt in 1...2 {
                do {
                    _ = try await h.pipeline.image(ImageRequest(url: h.url("/img/\(name)")))
                    Issue.record("\(name) was taken")
                } catch {
                    #expect(error.code == .unsupported, "\(name): \(error)")
                }
                #expect(h.origin.requestCount("/img/\(name)") == attempt, "\(name): not remembered as not an image")
            }
            let key = try NormalizedURL(h.url("/img/\(name)")).key
            #expect(try await h.store.negatives.answer(forKey: key) == nil, "\(name)")
        }
        // An HTML page is still "not an image", and remembered.
        await #expect(throws: ArtCacheError.self) { _ = try await h.pipeline.image(ImageRequest(url: h.url("/html200"))) }
        #expect(try await h.store.negatives.answer(forKey: try NormalizedURL(h.url("/html200")).key)?.reason == "not_an_image")
        try await h.pipeline.close()
    }
}
