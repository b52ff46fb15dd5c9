@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// Review finding: ETag and Last-Modified come from an origin and are sent
/// back to it; a value with CR/LF (header injection) or over a sane length
/// is dropped, never stored or replayed.
@Suite("Replayed validators", .timeLimit(.minutes(3)))
struct HTTPValidatorTests {
    @Test(arguments: ["\"a\"\r\nX-Injected: 1", "\"a\"\n", "\"a\u{0}\"", "\"é\"", "", " \"a\"", String(repeating: "e", count: 257)])
    func unsafeValuesAreDropped(_ value: String) {
        #expect(HTTPValidators.replayable(value) == nil)
        let validators = HTTPValidators(etag: value, lastModified: value)
        #expect(validators.etag == nil)
        #expect(validators.lastModified == nil)
    }

    @Test(arguments: ["\"abc\"", "W/\"5e-1f\"", "Wed, 21 Oct 2015 07:28:00 GMT", String(repeating: "e", count: 256)])
    func saneValuesAreKept(_ value: String) {
        #expect(HTTPValidators.replayable(value) == value)
        #expect(HTTPValidators(etag: value).etag == value)
    }

    /// An origin's over-long ETag is not stored, so the revalidation of the
    /// expired entry sends no If-None-Match (the origin answers 200, not 304).
    @Test func anOverlongETagIsNeitherStoredNorSent() async throws {
        let h = try await DownloaderTests.Harness()
        let long = "\"" + String(repeating: "x", count: 400) + "\""
        h.origin.register("long.jpg", .init(body: h.jpeg, contentType: "image/jpeg", cacheControl: "max-age=0", etag: long))
        let url = h.origin.url("/img/long.jpg")
        #expect(try await h.pipeline.original(url).source == .downloaded)
        #expect(try await h.store.entry(forURL: url)?.etag == nil)
        #expect(try await h.pipeline.original(url).source == .downloaded)
        #expect(h.origin.notModifiedCount == 0)
        #expect(h.origin.requestCount("/img/long.jpg") == 2)
    }

    /// A row written with a hostile value (another writer, an older version)
    /// still cannot put CR/LF on the wire: the store keeps nothing.
    @Test func aStoredInjectionIsDropped() async throws {
        let h = try await DownloaderTests.Harness()
        let url = h.origin.url("/img/a.jpg")
        _ = try await h.store.put(url: url, data: h.jpeg, declaredType: "image/jpeg",
                                  validators: HTTPValidators(etag: "\"a1\"\r\nX-Evil: 1", lastModified: "x\r\ny"))
        let entry = try #require(try await h.store.entry(forURL: url))
        #expect(entry.etag == nil)
        #expect(entry.lastModified == nil)
    }

    /// Response header lines split at the first colon byte. As Characters,
    /// ":" followed by a combining mark is not ":", and such a line (a
    /// `Location` included, which the redirect policy must see) was skipped.
    @Test func headerLinesSplitAtTheColonByte() throws {
        let plain = try #require(HTTPHeaderLine.field("ETag: \"a:b\"\r\n"))
        #expect(plain.name == "etag" && plain.value == "\"a:b\"")
        let combined = try #require(HTTPHeaderLine.field("Location:\u{31A}http://127.0.0.2/x\r\n"))
        #expect(combined.name == "location" && combined.value == "\u{31A}http://127.0.0.2/x")
        #expect(HTTPHeaderLine.field("no colon here\r\n") == nil)
        // Optional whitespace (SP, HTAB) around the value and the name, the name in ASCII lower case.
        let spaced = try #require(HTTPHeaderLine.field("Cache-CONTROL \t:\t max-age=60 \t\r\n"))
        #expect(spaced.name == "cache-control" && spaced.value == "max-age=60")
        let empty = try #require(HTTPHeaderLine.field("X-Empty:   \r\n"))
        #expect(empty.name == "x-empty" && empty.value.isEmpty)
        let unicode = try #require(HTTPHeaderLine.field("Link: <https://h/ä>; rel=\"x\"\r\n"))
        #expect(unicode.value == "<https://h/ä>; rel=\"x\"")
    }
}
