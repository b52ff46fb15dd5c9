@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// `artcache prefetch` and `artcache get`, run as the built binary against a
/// loopback origin started by the test.
@Suite("prefetch and get CLI", .timeLimit(.minutes(3)))
struct PrefetchCLITests {
    @Test func prefetchAnITunesResultSet() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let jpeg = try Fixtures.image(suffix: ".jpg")
        origin.register("1.jpg", .init(body: jpeg, contentType: "image/jpeg"))
        origin.register("2.jpg", .init(body: jpeg, contentType: "application/octet-stream"))
        let results = """
            {"resultCount": 4, "results": [
              {"trackName": "a", "artworkUrl100": "\(origin.url("/img/1.jpg"))"},
              {"trackName": "b", "artworkUrl100": "\(origin.url("/img/2.jpg"))"},
              {"trackName": "c", "artworkUrl100": "\(origin.url("/img/1.jpg"))"},
              {"trackName": "d", "artworkUrl100": "\(origin.url("/html200"))"},
              {"trackName": "e", "artworkUrl100": "\(origin.url("/status/404"))"}
            ]}
            """
        let input = dir.write("itunes.json", results)
        let cache = dir.file("cache")
        let run = try await CLI.run(["prefetch", input, "--cache-dir", cache, "--json"])
        #expect(run.status == 1)  // one refused, one failed
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        for key in ["requested", "cached", "revalidated", "downloaded", "repaired", "refused", "failed", "failures", "bytes", "seconds"] {
            #expect(summary[key] != nil, "missing \(key)")
        }
        #expect(summary["requested"] as? Int == 4)  // deduplicated
        #expect(summary["downloaded"] as? Int == 2)
        #expect(summary["repaired"] as? Int == 1)
        #expect(summary["refused"] as? Int == 1)
        #expect(summary["failed"] as? Int == 1)
        #expect((summary["failures"] as? [String: Int]) == ["http_404": 1])

        // Plain-text input from stdin, forced format; all cached now: exit 0.
        let again = try await CLI.run(["prefetch", dir.write("urls.txt", origin.url("/img/1.jpg") + "\n# comment\n" + origin.url("/img/2.jpg") + "\n"),
                                 "--format", "urls", "--cache-dir", cache])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("cached       2"))
        #expect(again.stderr.contains("progress 2/2"))  // line-based progress when not a terminal

        let stats = try await CLI.json(["stats", "--cache-dir", cache, "--json"])
        #expect(stats["originals"] as? Int == 2)
        #expect((stats["repairs"] as? [String: Int]) == ["application/octet-stream -> image/jpeg": 1])
    }

    @Test func resultSetErrorsAreClear() async throws {
        let dir = TempDir()
        let githubError = dir.write("err.json", #"{"message":"Validation Failed","errors":[{"resource":"Search","field":"q","code":"missing"}]}"#)
        let run = try await CLI.run(["prefetch", githubError, "--cache-dir", dir.file("c")])
        #expect(run.status != 0)
        #expect(run.stderr.contains("GitHub API error"))
        let empty = dir.write("empty.json", #"{"total_count":0,"incomplete_results":false,"items":[]}"#)
        let none = try await CLI.run(["prefetch", empty, "--cache-dir", dir.file("c")])
        #expect(none.status != 0)
        #expect(none.stderr.contains("no image URLs"))
    }

    @Test func getWritesBytesAndMetadata() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        let png = try Fixtures.image(bands: 4, suffix: ".png")
        origin.register("a.png", .init(body: png, contentType: "image/png", cacheControl: "max-age=3600", etag: "\"p\""))
        let cache = dir.file("cache")
        let out = dir.file("out.png")
        let got = try await CLI.run(["get", origin.url("/img/a.png"), "-o", out, "--cache-dir", cache])
        #expect(got.status == 0, "\(got.stderr)")
        #expect(FileManager.default.contents(atPath: out) == png)
        let info = try await CLI.json(["get", origin.url("/img/a.png"), "--json", "--cache-dir", cache])
        #expect(info["source"] as? String == "cached")
        #expect(info["content_type"] as? String == "image/png")
        #expect(info["etag"] as? String == "\"p\"")
        #expect(info["path"] is NSNull, "a small blob lives inside the database: no path")
        // The original's size and placeholder (issue 21).
        #expect(info["width"] as? Int == 64 && info["height"] as? Int == 48)
        #expect((info["color"] as? String)?.wholeMatch(of: /#[0-9a-f]{6}/) != nil, "\(info["color"] ?? "none")")
        #expect((info["thumbhash"] as? String).flatMap { Data(base64Encoded: $0) }.map { $0.count >= 5 } == true)
        #expect(origin.requestCount("/img/a.png") == 1)
        // With inline_max 0 every blob is a file: `path` names it, `-o` still writes the bytes.
        let fileCache = dir.file("file-cache")
        let asFile = try await CLI.json(["get", origin.url("/img/a.png"), "--json", "--cache-dir", fileCache],
                                  environment: ["ARTCACHE_CACHE_INLINE_MAX": "0"])
        let path = try #require(asFile["path"] as? String)
        #expect(FileManager.default.contents(atPath: path) == png)
        let out2 = dir.file("out2.png")
        #expect(try await CLI.run(["get", origin.url("/img/a.png"), "-o", out2, "--cache-dir", fileCache],
                            environment: ["ARTCACHE_CACHE_INLINE_MAX": "0"]).status == 0)
        #expect(FileManager.default.contents(atPath: out2) == png)
        let missing = try await CLI.run(["get", origin.url("/status/404"), "--cache-dir", cache])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("HTTP status 404"))
    }

    /// `repaired` in `get --json` is the stored original's, not only the
    /// first download's: a PNG served as image/jpeg says so when cached too.
    @Test func getSaysRepairedForACachedOriginal() async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        origin.register("wrong.png", .init(body: try Fixtures.image(bands: 3, suffix: ".png"), contentType: "image/jpeg",
                                           cacheControl: "max-age=3600"))
        origin.register("right.png", .init(body: try Fixtures.image(bands: 3, suffix: ".png"), contentType: "image/png",
                                           cacheControl: "max-age=3600"))
        let cache = dir.file("cache")
        let first = try await CLI.json(["get", origin.url("/img/wrong.png"), "--json", "--cache-dir", cache])
        #expect(first["repaired"] as? Bool == true && first["content_type"] as? String == "image/png")
        let cached = try await CLI.json(["get", origin.url("/img/wrong.png"), "--json", "--cache-dir", cache])
        #expect(cached["source"] as? String == "cached")
        #expect(cached["repaired"] as? Bool == true, "the cached original's type was repaired too")
        #expect(cached["declared_type"] as? String == "image/jpeg")
        let right = try await CLI.json(["get", origin.url("/img/right.png"), "--json", "--cache-dir", cache])
        let rightCached = try await CLI.json(["get", origin.url("/img/right.png"), "--json", "--cache-dir", cache])
        #expect(right["repaired"] as? Bool == false && rightCached["repaired"] as? Bool == false)
        #expect(origin.requestCount("/img/wrong.png") == 1)
    }

    @Test func retryDrainsTheQueue() async throws {
        let dir = TempDir()
        let cache = dir.file("cache")
        // The origin is down (its port held, refusing), then comes back on the same socket.
        let held = try HeldPort()
        let url = held.baseURL + "/img/x.jpg"
        let failed = try await CLI.run(["prefetch", dir.write("u.txt", url + "\n"), "--cache-dir", cache, "--json"],
                                 environment: ["ARTCACHE_DOWNLOAD_RETRIES": "0"])
        #expect(failed.status == 1)
        #expect(try await CLI.json(["stats", "--cache-dir", cache, "--json"])["retry_queue"] as? Int == 1)
        let back = try held.listen()
        defer { back.stop() }
        back.register("x.jpg", .init(body: try Fixtures.image(suffix: ".jpg"), contentType: "image/jpeg"))
        let drained = try await CLI.run(["prefetch", "--retry", "--cache-dir", cache, "--json"])
        #expect(drained.status == 0, "\(drained.stdout) \(drained.stderr)")
        #expect(try await CLI.json(["stats", "--cache-dir", cache, "--json"])["retry_queue"] as? Int == 0)
    }
}
