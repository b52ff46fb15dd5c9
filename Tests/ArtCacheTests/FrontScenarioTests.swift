import ArtCacheOrigin
import Foundation
import Testing
import ArtCache

// The code of the DocC article "Using artcache as the image layer of a front"
// (Sources/ArtCache/ArtCache.docc/ImageLayerOfAFront.md), compiled and run
// here against a loopback origin. Only the public API is used (no
// @testable import): this is what a front sees.

// MARK: iTunes: prefetch the result set, then one thumbnail per row

struct AlbumRow {
    let title: String
    let artist: String
    let artworkURL: String
}

/// A search results list: prefetch every row's artwork as soon as the API
/// answers, then show each visible row from memory when it can.
final class AlbumList {
    let pipeline: ImagePipeline
    let prefetcher: ImagePrefetcher
    private(set) var rows: [AlbumRow] = []

    init(pipeline: ImagePipeline) {
        self.pipeline = pipeline
        self.prefetcher = ImagePrefetcher(pipeline: pipeline)  // low priority
    }

    static func thumbnail(_ row: AlbumRow, priority: ImagePriority = .normal) -> ImageRequest {
        ImageRequest(url: row.artworkURL, width: 100, height: 100, fit: .cover, priority: priority,
                     options: .placeholderOnFailure)
    }

    /// The API answered: parse, remember the rows, prefetch their thumbnails.
    func show(searchResponse json: Data) throws -> PrefetchBatch {
        let results = try JSONDecoder().decode(SearchResults.self, from: json).results
        rows = results.compactMap { result in
            result.artworkUrl100.map {
                AlbumRow(title: result.collectionName ?? result.trackName ?? "", artist: result.artistName ?? "", artworkURL: $0)
            }
        }
        return prefetcher.start(rows.map { Self.thumbnail($0) })
    }

    /// A row comes into view: a memory hit shows at once, else load it now.
    func image(forRow index: Int) async throws -> ImageResponse {
        let request = Self.thumbnail(rows[index], priority: .high)
        if let hit = pipeline.cachedImage(for: request) { return hit }
        return try await pipeline.image(request)
    }

    struct SearchResults: Decodable {
        struct Result: Decodable {
            let artistName: String?
            let collectionName: String?
            let trackName: String?
            let artworkUrl100: String?
        }
        let results: [Result]
    }
}

// MARK: GitHub users: a reused row cancels its previous load

/// One row of a user list. Rows are reused while scrolling: a row shows a
/// new user, and the previous user's avatar is no longer wanted.
final class UserCell: @unchecked Sendable {
    // @unchecked: used from one task at a time, like a UI cell on the main thread.
    private var task: ImageTask?
    private(set) var login = ""

    func prepareForReuse() {
        task?.cancel()  // the last one waiting stops the download and the render
        task = nil
    }

    func configure(login: String, avatarURL: String, pipeline: ImagePipeline) -> ImageTask {
        prepareForReuse()
        self.login = login
        let task = pipeline.task(ImageRequest(url: avatarURL, width: 40, height: 40, fit: .cover))
        self.task = task
        return task
    }

    /// The row scrolled into the middle of the screen: hurry its avatar.
    func becameVisible() { task?.priority = .veryHigh }
}

// MARK: Twitter: a timeline where every row shows an avatar or a placeholder

struct TimelineRow {
    let screenName: String
    let avatar: ImageResponse
    var showsPlaceholder: Bool { avatar.source == .placeholder }
}

func loadTimeline(_ statuses: [(screenName: String, avatarURL: String)], pipeline: ImagePipeline) async throws -> [TimelineRow] {
    try await withThrowingTaskGroup(of: (Int, TimelineRow).self) { group in
        for (index, status) in statuses.enumerated() {
            group.addTask {
                let request = ImageRequest(url: status.avatarURL, width: 48, height: 48, fit: .cover,
                                           options: .placeholderOnFailure)
                // A failed avatar (404, HTML, timeout...) is a grey square with the
                // error attached: never a broken image, never an exception.
                return (index, TimelineRow(screenName: status.screenName, avatar: try await pipeline.image(request)))
            }
        }
        var rows = [TimelineRow?](repeating: nil, count: statuses.count)
        for try await (index, row) in group { rows[index] = row }
        return rows.compactMap { $0 }
    }
}

@Suite("Front scenarios (the DocC article's code)", .timeLimit(.minutes(2)))
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
