@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheRender
@testable import ArtCacheResultSets
@testable import ArtCacheStore
import Foundation
import Testing

// MARK: - Shared corpus

/// Expectations for the shared corpus samples (kept out of the suite type: its own
/// `@Suite` trait cannot refer back to it).
enum ResultSetCorpus {
    /// `../shared/corpus/api` relative to the package root (three levels above this file).
    static let corpusAPIPath: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("shared/corpus/api").path

    /// What one corpus sample must parse to; counts were taken independently with python3's json module.
    struct Expectation: Sendable, CustomTestStringConvertible {
        enum Outcome: Sendable { case urls(ResultSetFormat, Int), error(ResultSetError.Code) }
        let file: String
        let outcome: Outcome
        var testDescription: String { file }
    }

    static let expectations: [Expectation] = [
        .init(file: "itunes_search_songs_raw.json", outcome: .urls(.itunes, 9)),
        // 16 results, 47 artwork values, but the album and 14 tracks share one artwork.
        .init(file: "itunes_lookup_album_with_tracks.json", outcome: .urls(.itunes, 6)),
        .init(file: "github_search_users_2014.json", outcome: .urls(.githubUsers, 30)),
        .init(file: "github_search_users_2014_gravatar_avatars.json", outcome: .urls(.githubUsers, 30)),
        .init(file: "github_search_users_2021.json", outcome: .urls(.githubUsers, 10)),
        .init(file: "github_search_error_422_validation.json", outcome: .error(.apiError)),
        // 30 items, one owner appears twice.
        .init(file: "github_search_repositories_2014.json", outcome: .urls(.githubRepos, 29)),
        .init(file: "github_search_repositories_2021.json", outcome: .urls(.githubRepos, 2)),
        .init(file: "github_search_repositories_empty_2018.json", outcome: .error(.noImageURLs)),
        .init(file: "twitter_v1.1_users_show.json", outcome: .urls(.twitter, 1)),
        .init(file: "twitter_v1.1_statuses_show.json", outcome: .urls(.twitter, 1)),
        .init(file: "twitter_v1.1_users_search.json", outcome: .urls(.twitter, 20)),
        .init(file: "twitter_v1.1_status_quoted_with_media.json", outcome: .urls(.twitter, 2)),
        .init(file: "twitter_v1.1_error_109.json", outcome: .error(.apiError)),
    ]
}

@Suite("ResultSet: corpus", .enabled(if: FileManager.default.fileExists(atPath: ResultSetCorpus.corpusAPIPath)))
struct ResultSetCorpusTests {
    @Test(arguments: ResultSetCorpus.expectations)
    func sample(_ expectation: ResultSetCorpus.Expectation) throws {
        let url = URL(fileURLWithPath: ResultSetCorpus.corpusAPIPath).appendingPathComponent(expectation.file)
        let data = try Data(contentsOf: url)
        switch expectation.outcome {
        case .urls(let format, let count):
            let result = try ResultSet.parse(data)
            #expect(result.format == format)
            #expect(result.urls.count == count)
            #expect(Set(result.urls).count == result.urls.count)
            #expect(result.urls.allSatisfy { $0.hasPrefix("https://") })
            // Forcing the detected format gives the same answer.
            #expect(try ResultSet.parse(data, format: format) == result)
        case .error(let code):
            do {
                let result = try ResultSet.parse(data)
                Issue.record("expected \(code), got \(result)")
            } catch {
                #expect(error.code == code)
            }
        }
    }

    @Test func everySampleHasAnExpectation() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: ResultSetCorpus.corpusAPIPath)
            .filter { $0.hasSuffix(".json") }
        #expect(Set(files) == Set(ResultSetCorpus.expectations.map(\.file)))
    }
}
