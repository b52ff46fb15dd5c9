import ArtCacheCore
import ArtCachePipeline
import ArtCacheRender
import ArtCacheResultSets
import Foundation

// The code of the DocC article "Using artcache as the image layer of a
// front" (Sources/ArtCachePipeline/ArtCachePipeline.docc/ImageLayerOfAFront.md): each
// region between `// snippet: NAME` and `// snippet-end` is one of its code
// blocks, character for character (FrontScenarioTests.articleShowsThisCode
// checks it), and the tests beside this file run it against a loopback
// origin. Only the public API is used (no @testable import): this is what a
// front sees.

// snippet: open
func runFront(cacheDirectory: String, _ front: (ImagePipeline) async throws -> Void) async throws {
    var configuration = Configuration()                // the documented defaults
    configuration.cache.directory = cacheDirectory
    configuration.memory = MemorySettings(maxBytes: 64_000_000, maxEntries: 10_000)
    let pipeline = try await ImagePipeline.open(configuration: configuration)
    try await front(pipeline)                           // the front runs
    try await pipeline.close()                          // writes access times, stops downloads
}
// snippet-end

// snippet: albums
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
// snippet-end

// snippet: users
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
// snippet-end

// snippet: timeline
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
// snippet-end

// snippet: manifest
/// What a page shows for one result before its image arrives.
struct ResultBox {
    let id: String?
    let side: Int                         // the box, in CSS pixels: nothing moves when the image comes
    let color: String?                    // the dominant colour, under…
    let placeholder: String?              // …the ThumbHash as a PNG data URL
    let oneX: ImageManifest.Reference?    // what to ask for at 1x…
    let twoX: ImageManifest.Reference?    // …and at 2x: a provider profile fetches a source this sharp
}

/// A result set → its page's boxes, in result order, without waiting on the
/// network: what is not cached yet is `pending` and prefetched at low priority.
func resultBoxes(_ pipeline: ImagePipeline, searchResponse json: Data, side: Int = 64) async throws -> [ResultBox] {
    let size = ImageSize(width: side, height: side)
    let manifest = try await pipeline.manifest(for: try ResultSet.parse(json), sizes: [size], fit: .cover)
    return manifest.items.map { item in
        let references = item.variants[size.description]
        return ResultBox(id: item.id, side: side, color: item.color, placeholder: item.placeholder,
                         oneX: references?["1x"], twoX: references?["2x"])
    }
}
// snippet-end
