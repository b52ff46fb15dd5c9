@testable import ArtCacheCore
import ArtCacheFixtures
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import GRDB
import Testing

/// Originals' intrinsics (upright size, dominant colour, ThumbHash): computed
/// once after the original is stored, kept in the index (schema
/// `v7-placeholders`), filled in for older rows when read or by
/// `verify --repair`, and handed out by `info(for:)`, `ImageResponse.info`
/// and `get --json`.
@Suite("Pipeline: placeholders in the index", .timeLimit(.minutes(2)))
struct PipelineInfoTests {
    /// The row's (width, height, color, thumbhash), read by another connection.
    static func row(_ dir: TempDir, url: String) throws -> (width: Int?, height: Int?, color: String?, hash: Data?)? {
        let key = try NormalizedURL.forStore(url).key.hex
        return try DatabaseQueue(path: dir.path + "/index.sqlite").read { db in
            try Row.fetchOne(db, sql: "SELECT width, height, color, thumbhash FROM entry WHERE key = ?", arguments: [key])
                .map { ($0["width"], $0["height"], $0["color"], $0["thumbhash"]) }
        }
    }

    /// A 2:1 JPEG of one colour on its side (EXIF 6): upright it is 1:2.
    static func sidewaysJPEG() throws -> Data {
        try SyntheticImage.orientedJPEG(width: 300, height: 150, orientation: 6)
    }

    @Test func aStoredOriginalGetsItsPlaceholderInTheBackground() async throws {
        let harness = try await LoopbackHarness()
        defer { harness.origin.stop() }
        let jpeg = try Self.sidewaysJPEG()
        harness.origin.register("a.jpg", .init(body: jpeg, contentType: "image/jpeg", cacheControl: "max-age=3600"))
        let url = harness.url("/img/a.jpg")
        let first = try await harness.pipeline.image(ImageRequest(url: url, width: 50, height: 50))
        #expect(first.info == nil, "computed after the answer, not before it")
        await harness.pipeline.waitForIntrinsicsJobs()
        await harness.store.waitForWritesBehind()
        #expect(harness.pipeline.renderer.placeholdersComputed == 1)

        let row = try #require(try Self.row(harness.dir, url: url))
        #expect(row.width == 150 && row.height == 300, "upright size: \(String(describing: row.width))x\(String(describing: row.height))")
        // From the render's own decode (1/2 scale here), not a second one:
        // the placeholder a decode of its own gives, within a few levels.
        let expected = try Renderer(settings: ThumbnailSettings()).intrinsicsBlocking(jpeg)
        let color = try #require(row.color)
        let channels = { (hex: String) in stride(from: 1, to: 7, by: 2).map { Int(hex.dropFirst($0).prefix(2), radix: 16)! } }
        #expect(zip(channels(color), channels(expected.placeholder.color)).allSatisfy { abs($0 - $1) <= 8 })
        let (stored, own) = (try ThumbHash.decode([UInt8](try #require(row.hash))), try ThumbHash.decode(expected.placeholder.thumbHash))
        #expect((stored.width, stored.height) == (own.width, own.height))

        // Read back: from the index, without computing again.
        let info = try await harness.pipeline.info(for: url, options: .cacheOnly)
        #expect(info == ImageInfo(url: info.url, width: 150, height: 300, color: color, thumbHash: try #require(row.hash)))
        #expect(info.placeholderDataURL()?.hasPrefix("data:image/png;base64,") == true)
        let original = try await harness.pipeline.image(ImageRequest(url: url))
        #expect(original.info == info, "an original's response carries its info")
        let thumb = try await harness.pipeline.image(ImageRequest(url: url, width: 20, height: 20, options: .cacheOnly))
        #expect(thumb.source == .disk && thumb.rendered, "a new size, rendered from the stored original")
        #expect(thumb.info == info, "a thumbnail's response carries its original's")
        #expect(harness.origin.requestCount("/img/a.jpg") == 1)
        await harness.pipeline.waitForIntrinsicsJobs()
        #expect(harness.pipeline.renderer.placeholdersComputed == 1, "computed once")
        try await harness.pipeline.close()
    }

    @Test func infoComputesAtOnceAndOnlyOntoTheBytesItWasComputedFrom() async throws {
        let harness = try await LoopbackHarness()
        defer { harness.origin.stop() }
        let png = try Fixtures.image(width: 80, height: 40, bands: 4, suffix: ".png")
        harness.origin.register("b.png", .init(body: png, contentType: "image/png", cacheControl: "max-age=3600"))
        let url = harness.url("/img/b.png")
        let info = try await harness.pipeline.info(for: url)
        #expect((info.width, info.height) == (80, 40))
        #expect(try Self.row(harness.dir, url: url)?.hash == info.thumbHash)

        // Bytes that are no longer the row's never get their placeholder attached.
        let entry = try #require(try await harness.store.entry(forURL: url))
        let taken = try await harness.store.setPlaceholder(key: entry.key, sha256: String(repeating: "0", count: 64),
                                                           OriginalIntrinsics(width: 1, height: 1, color: "#000000", thumbHash: Data([1])))
        #expect(!taken)
        #expect(try Self.row(harness.dir, url: url)?.color == info.color)
        try await harness.pipeline.close()
    }

    /// Rows stored without one (an older artcache): computed when next read,
    /// or by `verify --repair`; bytes that do not decode are counted, not fatal.
    @Test func olderRowsGetTheirsWhenReadOrFromVerifyRepair() async throws {
        let dir = TempDir()
        let jpeg = try Fixtures.image(width: 64, height: 48, suffix: ".jpg")
        let store = try await CacheStore.open(settings: Fixtures.settings(dir.path))
        for name in ["a", "b", "c"] {
            try await store.put(url: "https://h.example/\(name).jpg", data: jpeg, contentType: "image/jpeg",
                                validators: HTTPValidators(freshFor: 3600))
        }
        try await store.put(url: "https://h.example/broken.jpg", data: Data([0xFF, 0xD8, 0xFF]) + Data(count: 64),
                            contentType: "image/jpeg", validators: HTTPValidators(freshFor: 3600))
        try await store.close()
        #expect(try Self.row(dir, url: "https://h.example/a.jpg")?.hash == nil)

        let pipeline = try await Fixtures.pipeline(dir.path)
        let read = try await pipeline.image(ImageRequest(url: "https://h.example/a.jpg", options: .cacheOnly))
        #expect(read.info == nil)
        await pipeline.waitForIntrinsicsJobs()
        #expect(try Self.row(dir, url: "https://h.example/a.jpg")?.width == 64)

        let before = try await pipeline.verify()
        #expect(before.placeholdersMissing == 3 && before.remaining == 0, "missing placeholders are not problems")
        let repaired = try await pipeline.verify(repair: true)
        #expect(repaired.placeholdersComputed == 2)
        #expect(repaired.placeholdersFailed == 1)
        #expect(repaired.placeholdersMissing == 1, "the broken one")
        #expect(try Self.row(dir, url: "https://h.example/c.jpg")?.color != nil)
        try await pipeline.close()
    }

    /// Prefetch with thumbnails records them from the render's decode, in
    /// the first variant's write: no decode or write of their own. Without
    /// thumbnails it stores bytes only (no decode: the network's speed).
    @Test func prefetchWithThumbnailsRecordsThemWithoutADecodeOfTheirOwn() async throws {
        let harness = try await LoopbackHarness()
        defer { harness.origin.stop() }
        for name in ["p", "q"] {
            harness.origin.register("\(name).jpg", .init(body: try Fixtures.image(width: 120, height: 90, suffix: ".jpg"),
                                                        contentType: "image/jpeg", cacheControl: "max-age=3600"))
        }
        let (p, q) = (harness.url("/img/p.jpg"), harness.url("/img/q.jpg"))
        let sizes = [VariantSpec(width: 40, height: 40), VariantSpec(width: 60, height: 60)]
        let withThumbnails = await harness.pipeline.prefetch([p], variants: sizes)
        #expect(withThumbnails.summary.failed == 0)
        let bytesOnly = await harness.pipeline.prefetch([q], variants: [])
        #expect(bytesOnly.summary.failed == 0)
        await harness.pipeline.waitForIntrinsicsJobs()
        #expect(harness.pipeline.renderer.placeholdersComputed == 1, "one, from p's render")
        #expect(harness.pipeline.renderer.activity.started == 1, "p's one render; q decoded nothing")
        let row = try #require(try Self.row(harness.dir, url: p))
        #expect(row.width == 120 && row.height == 90 && row.color != nil && row.hash != nil)
        #expect(try Self.row(harness.dir, url: q)?.hash == nil)
        try await harness.pipeline.close()
    }
}
