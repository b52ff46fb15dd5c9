import ArtCacheOrigin
import ArtCachePipeline
import Foundation
import Testing

// The DocC article's code (FrontScenario+ArticleCode.swift) run against a
// loopback origin, and checked to be exactly what the article shows.

@Suite("Front scenarios (the DocC article's code)", .timeLimit(.minutes(3)))
struct FrontScenarioTests {
    /// A loopback origin serving `images` and a pipeline opened the way a
    /// front opens it; both are closed when `body` returns.
    static func withFront(_ images: [String: Data], _ body: (OriginServer, ImagePipeline) async throws -> Void) async throws {
        let dir = TempDir()
        let origin = try await OriginServer.start()
        defer { origin.stop() }
        for (name, data) in images {
            origin.register(name, .init(body: data, contentType: mediaType(ofName: name), cacheControl: "max-age=3600"))
        }
        var configuration = Configuration()
        configuration.cache.directory = dir.file("cache")
        configuration.download.retries = 0
        configuration.download.allowedNetworks = Fixtures.loopback  // the test origin is on loopback
        let pipeline = try await ImagePipeline.open(configuration: configuration)
        try await body(origin, pipeline)
        try await pipeline.close()
    }

    /// The article's code blocks are this test target's code, character for
    /// character: one source, so they cannot drift apart.
    @Test func articleShowsThisCode() throws {
        func blocks(_ text: String, opening: String, closing: String) -> [String] {
            var result: [String] = []
            var current: [Substring]?
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if current == nil, trimmed.hasPrefix(opening) {
                    current = []
                } else if current != nil, trimmed == closing {
                    result.append(current!.map { String($0).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
                        .joined(separator: "\n"))
                    current = nil
                } else {
                    current?.append(line)
                }
            }
            return result
        }
        let article = try String(contentsOfFile: Fixtures.packageRoot + "/Sources/ArtCachePipeline/ArtCachePipeline.docc/ImageLayerOfAFront.md",
                                 encoding: .utf8)
        let code = try String(contentsOfFile: Fixtures.packageRoot + "/Tests/ArtCacheTests/FrontScenario+ArticleCode.swift",
                              encoding: .utf8)
        let shown = blocks(article, opening: "```swift", closing: "```")
        let compiled = blocks(code, opening: "// snippet:", closing: "// snippet-end")
        #expect(shown.count == 5)
        #expect(shown == compiled)
    }

    /// The article's first block: open once, run, close (cache-only here: no network).
    @Test func openingAndClosingThePipeline() async throws {
        let dir = TempDir()
        try await runFront(cacheDirectory: dir.file("cache")) { pipeline in
            let miss = await pipeline.task(ImageRequest(url: "https://example.com/a.jpg", options: .cacheOnly)).result
            if case .failure(let error) = miss { #expect(error.code == .notCached) } else { Issue.record("not a miss") }
        }
        #expect(FileManager.default.fileExists(atPath: dir.file("cache/index.sqlite")))
    }

    @Test func iTunesListPrefetchesThenShowsRowsFromMemory() async throws {
        let art = try Fixtures.image(width: 600, height: 600, suffix: ".jpg")
        try await Self.withFront(Dictionary(uniqueKeysWithValues: (0..<8).map { ("\($0).jpg", art) })) { origin, pipeline in
            let results: [[String: Any]] = (0..<8).map { i in
                ["wrapperType": "collection", "artistName": "Artist \(i)", "collectionName": "Album \(i)",
                 "artworkUrl100": origin.url("/img/\(i).jpg")]
            }
            let json = try JSONSerialization.data(withJSONObject: ["resultCount": results.count, "results": results])
            let list = AlbumList(pipeline: pipeline)
            let summary = await (try list.show(searchResponse: json)).summary
            #expect(summary.downloaded == 8 && summary.succeeded)
            let requestsAfterPrefetch = origin.totalRequests
            for index in list.rows.indices {
                let image = try await list.image(forRow: index)
                #expect(image.source == .memory)
                #expect((image.width, image.height) == (100, 100))
            }
            #expect(origin.totalRequests == requestsAfterPrefetch)
        }
    }

    @Test func gitHubUserRowsCancelOnReuse() async throws {
        let octocat = try Fixtures.image(width: 460, height: 460, suffix: ".png")
        try await Self.withFront(["octocat.png": octocat]) { origin, pipeline in
            let cell = UserCell()
            let first = cell.configure(login: "slowpoke", avatarURL: origin.url("/slow/20/octocat.png"), pipeline: pipeline)
            await origin.waitForRequest("/slow/20/octocat.png")
            let second = cell.configure(login: "octocat", avatarURL: origin.url("/img/octocat.png"), pipeline: pipeline)
            cell.becameVisible()
            #expect(second.priority == .veryHigh)
            let avatar = try await second.response
            #expect((avatar.width, avatar.height) == (40, 40) && cell.login == "octocat")
            if case .failure(let error) = await first.result { #expect(error.code == .cancelled) } else { Issue.record("not cancelled") }
            await origin.waitForAbortedStream("/slow/20/octocat.png")  // the abandoned download was dropped
        }
    }

    @Test func twitterTimelineShowsPlaceholdersForBrokenAvatars() async throws {
        let jack = try Fixtures.image(width: 73, height: 73, suffix: ".jpg")
        try await Self.withFront(["jack.jpg": jack]) { origin, pipeline in
            let rows = try await loadTimeline([("jack", origin.url("/img/jack.jpg")), ("gone", origin.url("/status/404")),
                                               ("html", origin.url("/html200"))], pipeline: pipeline)
            #expect(rows.map(\.screenName) == ["jack", "gone", "html"])
            #expect(rows.map(\.showsPlaceholder) == [false, true, true])
            #expect(rows.allSatisfy { $0.avatar.width == 48 && $0.avatar.height == 48 && !$0.avatar.data.isEmpty })
            #expect(rows[1].avatar.error?.code == .httpStatus(404))
            #expect(rows[2].avatar.error?.code == .notAnImage)
        }
    }

    @Test func aPageFromAManifestHasSizesAndPlaceholdersBeforeTheImages() async throws {
        let artwork = try Fixtures.image(width: 120, height: 120, suffix: ".jpg")
        try await Self.withFront(["m1.jpg": artwork, "m2.jpg": artwork]) { origin, pipeline in
            let json = Data("""
                {"resultCount": 2, "results": [{"trackId": 1, "artworkUrl100": "\(origin.url("/img/m1.jpg"))"},
                                               {"trackId": 2, "artworkUrl100": "\(origin.url("/img/m2.jpg"))"}]}
                """.utf8)
            let first = try await resultBoxes(pipeline, searchResponse: json)
            #expect(first.map(\.id) == ["1", "2"])
            #expect(first.allSatisfy { $0.placeholder == nil && $0.side == 64 }, "nothing cached yet: no placeholder, no waiting")
            #expect(first[0].twoX?.size == "128x128" && first[0].twoX?.fit == "cover")
            _ = try await pipeline.info(for: origin.url("/img/m1.jpg"))
            let second = try await resultBoxes(pipeline, searchResponse: json)
            #expect(second[0].placeholder?.hasPrefix("data:image/png;base64,") == true)
            #expect(second[0].color?.count == 7)
        }
    }
}

/// The media type of a fixture by its name's extension (this file uses the
/// public API only, so not the sniffer).
private func mediaType(ofName name: String) -> String {
    switch (name as NSString).pathExtension.lowercased() {
    case "png": "image/png"
    case "webp": "image/webp"
    case "gif": "image/gif"
    default: "image/jpeg"
    }
}
