import ArtCache
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import Hummingbird
import Logging
import Testing
@testable import Fronts

/// The fronts without a browser: API parsing (bundled fixtures, and the
/// shared corpus when present), escaping, the image route's placeholder and
/// failure paths, and pages when the API is down.
@Suite("Fronts")
struct FrontsTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static var corpus: String { examples + "/../../shared/corpus/api" }

    static func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: "\(examples)/Fixtures/\(name).json"))
    }

    @Test func bundledFixturesParseIntoRows() throws {
        let albums = try APIModels.itunesRows(Self.fixture("itunes_search"))
        #expect(albums.count == 4)
        #expect(albums[0].title == "In Between Dreams" && albums[0].subtitle == "Jack Johnson")
        // As the API gives it: the pipeline's itunes profile fetches the sharper rendition a 2x screen needs.
        #expect(albums[0].imageURL == "{{ORIGIN}}/img/a1/100x100bb.jpg")
        let repos = try APIModels.repoRows(Self.fixture("github_repos"))
        #expect(repos.map(\.title) == ["apple/swift", "vapor/vapor", "hummingbird-project/hummingbird"])
        #expect(repos[0].imageURL == "{{ORIGIN}}/img/u1/avatar.png" && repos[0].detail == "★ 67000")
        #expect(try APIModels.userRows(Self.fixture("github_users")).map(\.title) == ["octocat", "swiftdev", "ghost", "blinky"])
        let tweets = try APIModels.timelineRows(Self.fixture("twitter_home_timeline"))
        // the retweeted status and the status it quotes are rows of their own
        #expect(tweets.map(\.title) == ["Ada", "Linus", "↳ Grace", "↳ Alan", "Barbara"])
        #expect(tweets[3].imageURL == "{{ORIGIN}}/img/t4/normal.jpg")
        #expect(throws: (any Error).self) { try APIModels.repoRows(Data("{\"message\":\"Validation Failed\"}".utf8)) }
    }

    @Test func realAPIResponsesFromTheCorpus() throws {
        guard FileManager.default.fileExists(atPath: Self.corpus) else { return }  // ../shared absent: nothing to read
        func read(_ name: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: "\(Self.corpus)/\(name)")) }
        let songs = try APIModels.itunesRows(read("itunes_search_songs_raw.json"))
        #expect(!songs.isEmpty && songs.allSatisfy { $0.imageURL?.hasPrefix("https://") == true })
        #expect(try APIModels.repoRows(read("github_search_repositories_2021.json")).allSatisfy { $0.imageURL != nil })
        #expect(try APIModels.userRows(read("github_search_users_2021.json")).allSatisfy { $0.imageURL != nil })
        #expect(try APIModels.repoRows(read("github_search_repositories_empty_2018.json")).isEmpty)
        let status = try read("twitter_v1.1_status_quoted_with_media.json")
        let timeline = Data("[".utf8) + status + Data("]".utf8)
        let rows = try APIModels.timelineRows(timeline)
        #expect(rows.count >= 2 && rows.allSatisfy { $0.imageURL?.hasPrefix("https://") == true })  // the quoted status too
    }

    @Test func pagesEscapeWhatTheAPISays() {
        let row = FrontRow(imageURL: "https://x/a.jpg", title: "<script>alert(1)</script>", subtitle: "a & b", detail: "\"q\"")
        let image = Pages.Image(src: "/image?src=a\"b", srcset: "/image?s=128 2x", side: 64, status: "cached", color: "#102030",
                                placeholder: "data:image/png;base64,AAAA")
        let html = Pages.page(title: "t", form: Pages.searchForm(action: "/x", name: "q", value: "\"><b>"), notice: nil,
                              rows: [(row, image)], empty: "none")
        #expect(!html.contains("<script>") && html.contains("&lt;script&gt;") && html.contains("a &amp; b"))
        #expect(!html.contains("\"><b>") && html.contains("value=\"&quot;&gt;&lt;b&gt;\""))
        #expect(html.contains("src=\"/image?src=a&quot;b\" srcset=\"/image?s=128 2x\" width=\"64\" height=\"64\""), "\(html)")
        #expect(html.contains("data-status=\"cached\""))
        #expect(html.contains("style=\"background-color:#102030;background-image:url("), "\(html)")
    }

    @Test(.timeLimit(.minutes(2)))
    func imageRouteAnswersPlaceholdersNeverBrokenImages() async throws {
        // A loopback port where nothing listens, held for the whole test (no other process can take it).
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let down = "http://127.0.0.1:\(refusing.port)"
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fronts-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var configuration = Configuration()
        configuration.cache.directory = dir
        configuration.download.allowedNetworks = [IPNetwork("127.0.0.0/8")!]
        configuration.download.retries = 0
        configuration.download.connectTimeout = 2
        let pipeline = try await ImagePipeline.open(configuration: configuration)
        var options = FrontsOptions()
        options.itunesAPI = down  // nothing listens there: the API is down
        let fronts = Fronts(pipeline: pipeline, options: options, logger: Logger(label: "test"), cancelOnDisconnect: false)
        let app = buildFrontsApplication(fronts: fronts)
        let dead = ServiceURLSigner.encodeSource("\(down)/a.jpg")
        // ::1 is loopback but not among the allowed networks: refused at connect time
        let blocked = ServiceURLSigner.encodeSource("http://[::1]:9/a.jpg")
        try await app.test(.router) { client in
            for source in [dead, blocked] {
                try await client.execute(uri: "/image?src=\(source)&s=64", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType]?.hasPrefix("image/") == true)
                    #expect(response.headers[HTTPField.Name("X-ArtCache-Error")!] != nil)
                    #expect(response.headers[.cacheControl] == "no-store")
                    #expect(response.body.readableBytes > 0)
                }
            }
            for bad in ["/image?src=%%%&s=64", "/image?src=\(dead)&s=0", "/image?src=\(dead)"] {
                try await client.execute(uri: bad, method: .get) { #expect($0.status == .badRequest) }
            }
            // the API is down and nothing was saved: a notice, no rows
            try await client.execute(uri: "/itunes?term=x", method: .get) { response in
                let body = String(buffer: response.body)
                #expect(response.status == .ok && body.contains("could not be reached") && !body.contains("<li>"))
            }
            // no term: the form only
            try await client.execute(uri: "/itunes", method: .get) { response in
                #expect(String(buffer: response.body).contains("<form action=\"/itunes\""))
            }
        }
        #expect(try await pipeline.retryQueue().map(\.url) == ["\(down)/a.jpg"])  // the network failure waits for a retry
        try await pipeline.close()
    }
}

extension FrontsTests {
    /// The rows a page shows first ask for their images at high priority,
    /// the rest at low: signed `pri=high` / `pri=low` service paths (that
    /// verify), or the `/image` route's `pri=` in process. The API is down
    /// and its saved answer (4 albums) is used; nothing is fetched.
    @Test(.timeLimit(.minutes(2)))
    func visibleRowsAskHighAndTheRestLow() async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let down = "http://127.0.0.1:\(refusing.port)"
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fronts-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var configuration = Configuration()
        configuration.cache.directory = dir
        configuration.download.allowedNetworks = [IPNetwork("127.0.0.0/8")!]
        configuration.download.retries = 0
        configuration.download.connectTimeout = 2
        let pipeline = try await ImagePipeline.open(configuration: configuration)
        // The API's saved answer, where the API client keeps it.
        let api = "\(down)/search?term=x&entity=album"
        let saved = URL(fileURLWithPath: dir).appendingPathComponent("fronts-api")
        try FileManager.default.createDirectory(at: saved, withIntermediateDirectories: true)
        let body = String(decoding: try Self.fixture("itunes_search"), as: UTF8.self).replacingOccurrences(of: "{{ORIGIN}}", with: down)
        try Data(body.utf8).write(to: saved.appendingPathComponent(try CacheKey(url: api).hex + ".json"))
        let signer = ServiceURLSigner(keys: [[UInt8](repeating: 3, count: 32)])
        for mode in [ImageMode.service(base: "http://127.0.0.1:1", signer: signer), .inProcess] {
            var options = FrontsOptions()
            options.itunesAPI = down
            options.images = mode
            options.visibleRows = 2
            let fronts = Fronts(pipeline: pipeline, options: options, logger: Logger(label: "test"), cancelOnDisconnect: false)
            #expect(fronts.rowPriority(1) == .high && fronts.rowPriority(2) == .low)
            try await buildFrontsApplication(fronts: fronts).test(.router) { client in
                try await client.execute(uri: "/itunes?term=x", method: .get) { response in
                    let html = String(buffer: response.body)
                    let sources = html.matches(of: /<img src="([^"]*)" srcset="([^"]*) 2x"/).map {
                        (String($0.1).replacingOccurrences(of: "&amp;", with: "&"), String($0.2).replacingOccurrences(of: "&amp;", with: "&"))
                    }
                    #expect(sources.count == 4, "\(html)")
                    for (row, (one, two)) in sources.enumerated() {
                        let expected = row < 2 ? "high" : "low"
                        for source in [one, two] {
                            if case .service(let base, _) = mode {
                                let path = String(source.dropFirst(base.count))
                                let parts = path.split(separator: "/", omittingEmptySubsequences: false)
                                #expect(parts.count == 4 && parts[2].hasSuffix(",pri=\(expected)"), "row \(row): \(source)")
                                #expect(signer.isValid(signature: String(parts[1]), for: "/\(parts[2])/\(parts[3])"), "row \(row)")
                            } else {
                                #expect(source.hasPrefix("/image?") && source.hasSuffix("&pri=\(expected)"), "row \(row): \(source)")
                            }
                        }
                    }
                }
            }
        }
        try await pipeline.close()
    }
}

/// A 127.0.0.1 TCP port that refuses connections (ECONNREFUSED) until `close()`:
/// a socket bound to port 0 that never listens holds the port, so no other
/// process can take it meanwhile (binding, closing and connecting later would
/// race with anyone else who binds port 0).
final class RefusingPort: Sendable {
    let port: UInt16
    private let descriptor: Int32

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init() throws {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian  // 127.0.0.1
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else {
            let error = errno
            closeDescriptor(descriptor)
            throw Failure(description: "bind/getsockname 127.0.0.1:0: errno \(error)")
        }
        self.descriptor = descriptor
        self.port = UInt16(bigEndian: address.sin_port)
    }

    /// Frees the port (call once, when the test is done with it).
    func close() {
        closeDescriptor(descriptor)
    }
}

private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
