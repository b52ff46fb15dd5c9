@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheRender
@testable import ArtCacheResultSets
@testable import ArtCacheStore
import Foundation
import Testing

// MARK: - Helpers

/// The URLs a document gives (its items and their ids: `itunesItemsTakeTheFirstArtworkAndTheTrackId` and ManifestTests).
private func parseResultSet(_ text: String, format: ResultSetFormat? = nil) throws(ResultSetError) -> ResultSet {
    let parsed = try ResultSet.parse(Data(text.utf8), format: format)
    return ResultSet(format: parsed.format, urls: parsed.urls)
}

/// The error `parse` throws, or nil (recorded as a failure) when it succeeds.
private func resultSetError(_ text: String, format: ResultSetFormat? = nil,
                        sourceLocation: SourceLocation = #_sourceLocation) -> ResultSetError? {
    do {
        let result = try parseResultSet(text, format: format)
        Issue.record("expected an error, got \(result)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

// MARK: - iTunes

@Suite("ResultSet: iTunes")
struct ResultSetITunesTests {
    static let search = """
        {"resultCount": 3, "results": [
          {"trackId": 1, "artworkUrl30": "https://a.example/1/30.jpg", "artworkUrl60": "https://a.example/1/60.jpg",
           "artworkUrl100": " https://a.example/1/100.jpg\\n", "artworkUrl600": "https://a.example/1/600.jpg"},
          {"trackId": 2, "artworkUrl100": "https://a.example/1/100.jpg", "artworkUrl60": 60, "artworkUrl30": ""},
          {"trackId": 3, "artworkUrl512": "https://a.example/3/512.jpg", "artworkUrl60": null},
          "not an object"
        ]}
        """

    /// One item per result with artwork: `artworkUrl100` first, else the
    /// next key present; the track id (else the collection's).
    @Test func itunesItemsTakeTheFirstArtworkAndTheTrackId() throws {
        let items = try ResultSet.parse(Data(Self.search.utf8)).items
        #expect(items == [ResultSet.Item(url: "https://a.example/1/100.jpg", id: "1"),
                          ResultSet.Item(url: "https://a.example/1/100.jpg", id: "2"),
                          ResultSet.Item(url: "https://a.example/3/512.jpg", id: "3")])
    }

    @Test func autoDetectTakesArtworkKeysInOrderAndDedupes() throws {
        let result = try parseResultSet(Self.search)
        #expect(result == ResultSet(format: .itunes, urls: [
            "https://a.example/1/100.jpg",
            "https://a.example/1/30.jpg",
            "https://a.example/1/60.jpg",
            "https://a.example/1/600.jpg",
            "https://a.example/3/512.jpg",
        ]))
    }

    @Test func forcedFormatMatches() throws {
        #expect(try parseResultSet(Self.search, format: .itunes).urls.count == 5)
    }

    @Test func lookupWithoutResultCountIsStillITunes() throws {
        let result = try parseResultSet(#"{"results":[{"wrapperType":"collection","artworkUrl60":"https://a.example/c/60.jpg"}]}"#)
        #expect(result.format == .itunes)
        #expect(result.urls == ["https://a.example/c/60.jpg"])
    }

    @Test func emptyResultsHaveNoImageURLs() {
        let error = resultSetError(#"{"resultCount":0,"results":[]}"#)
        #expect(error?.code == .noImageURLs)
        #expect(error?.message == "iTunes result set with 0 results has no image URLs")
        #expect(error?.description == error?.message)
    }

    @Test func resultsWithoutArtworkHaveNoImageURLs() {
        let error = resultSetError(#"{"resultCount":2,"results":[{"trackId":1},{"artworkUrl100":7}]}"#)
        #expect(error?.code == .noImageURLs)
        #expect(error?.message == "iTunes result set with 2 results has no image URLs")
    }

    @Test func errorBodyIsAnAPIError() {
        let body = #"{"errorMessage":"Invalid value(s) for key(s): [mediaType]","queryParameters":{"media":"x"}}"#
        for format in [nil, ResultSetFormat.itunes] {
            let error = resultSetError(body, format: format)
            #expect(error?.code == .apiError)
            #expect(error?.message == "iTunes API error: Invalid value(s) for key(s): [mediaType]")
        }
    }
}

// MARK: - GitHub

@Suite("ResultSet: GitHub")
struct ResultSetGitHubTests {
    static let users = """
        {"total_count": 3, "incomplete_results": false, "items": [
          {"login": "a", "avatar_url": "https://avatars.example/u/1?v=4"},
          {"login": "b", "avatar_url": "https://avatars.example/u/2?v=4"},
          {"login": "c", "avatar_url": "https://avatars.example/u/1?v=4"},
          {"login": "d", "avatar_url": null}
        ]}
        """
    static let repos = """
        {"total_count": 3, "items": [
          {"full_name": "a/x", "owner": {"login": "a", "avatar_url": "https://avatars.example/u/1"}},
          {"full_name": "b/y", "owner": {"login": "b", "avatar_url": "https://avatars.example/u/2"}},
          {"full_name": "a/z", "owner": {"login": "a", "avatar_url": "https://avatars.example/u/1"}}
        ]}
        """

    @Test func usersAutoAndForced() throws {
        let expected = ResultSet(format: .githubUsers,
                                 urls: ["https://avatars.example/u/1?v=4", "https://avatars.example/u/2?v=4"])
        #expect(try parseResultSet(Self.users) == expected)
        #expect(try parseResultSet(Self.users, format: .githubUsers) == expected)
    }

    @Test func reposAutoAndForced() throws {
        let expected = ResultSet(format: .githubRepos,
                                 urls: ["https://avatars.example/u/1", "https://avatars.example/u/2"])
        #expect(try parseResultSet(Self.repos) == expected)
        #expect(try parseResultSet(Self.repos, format: .githubRepos) == expected)
    }

    @Test func forcingTheOtherSearchIsAMismatch() {
        let asRepos = resultSetError(Self.users, format: .githubRepos)
        #expect(asRepos?.code == .formatMismatch)
        #expect(asRepos?.message == "expected a GitHub repositories search result (`items[].owner.avatar_url`) "
            + "but found a GitHub users search result with 4 items")
        let asUsers = resultSetError(Self.repos, format: .githubUsers)
        #expect(asUsers?.code == .formatMismatch)
        #expect(asUsers?.message.contains("but found a GitHub repositories search result with 3 items") == true)
    }

    @Test func emptySearchCannotBeTold() {
        let body = #"{"total_count":0,"incomplete_results":false,"items":[]}"#
        let auto = resultSetError(body)
        #expect(auto?.code == .noImageURLs)
        #expect(auto?.message == "GitHub search result with 0 items has no image URLs")
        let forced = resultSetError(body, format: .githubRepos)
        #expect(forced?.code == .noImageURLs)
        #expect(forced?.message == "GitHub repositories search result with 0 items has no image URLs")
        #expect(resultSetError(body, format: .githubUsers)?.code == .noImageURLs)
    }

    @Test func otherSearchKindsAreUnrecognized() {
        let error = resultSetError(#"{"total_count":1,"items":[{"sha":"abc","repository":{"id":1}}]}"#)
        #expect(error?.code == .unrecognized)
    }

    @Test func validationErrorBody() {
        let body = """
            {"message": "Validation Failed",
             "errors": [{"resource": "Search", "field": "q", "code": "missing"}],
             "documentation_url": "https://docs.github.com/v3/search"}
            """
        for format in [nil, ResultSetFormat.githubUsers, .githubRepos] {
            let error = resultSetError(body, format: format)
            #expect(error?.code == .apiError)
            #expect(error?.message == "GitHub API error: Validation Failed (422): q missing")
        }
    }

    @Test func errorBodyWithCustomMessagesAndWithoutErrors() {
        let custom = resultSetError(#"{"message":"Validation Failed","errors":[{"code":"custom","message":"Bad query"}]}"#)
        #expect(custom?.message == "GitHub API error: Validation Failed (422): Bad query")
        let plain = resultSetError(#"{"message":"API rate limit exceeded for 1.2.3.4.","documentation_url":"x"}"#)
        #expect(plain?.code == .apiError)
        #expect(plain?.message == "GitHub API error: API rate limit exceeded for 1.2.3.4.")
    }

    @Test func errorBodyForcedToAnotherAPIIsAMismatch() {
        let error = resultSetError(#"{"message":"Not Found"}"#, format: .itunes)
        #expect(error?.code == .formatMismatch)
        #expect(error?.message
            == "expected an iTunes result set (`results` array) but found a GitHub API error body (\"Not Found\")")
    }
}

// MARK: - Twitter

@Suite("ResultSet: Twitter")
struct ResultSetTwitterTests {
    /// Outer user, then retweet (whose user only has the http avatar) and its quote, then the outer quote,
    /// whose user embeds a status of its own.
    static let nested = """
        {"id": 1, "text": "RT", "user": {"screen_name": "outer",
            "profile_image_url": "http://pbs.example/outer.jpg", "profile_image_url_https": "https://pbs.example/outer.jpg"},
         "retweeted_status": {"text": "orig", "user": {"screen_name": "rt", "profile_image_url": "http://pbs.example/rt.jpg"},
             "quoted_status": {"text": "q1", "user": {"screen_name": "rtq", "profile_image_url_https": "https://pbs.example/rtq.jpg"}}},
         "quoted_status": {"full_text": "q2", "user": {"screen_name": "q", "profile_image_url_https": "https://pbs.example/q.jpg",
             "status": {"text": "latest", "user": {"profile_image_url_https": "https://pbs.example/outer.jpg"},
                 "retweeted_status": {"user": {"profile_image_url_https": "https://pbs.example/deep.jpg"}}}}}}
        """

    @Test func nestedRetweetAndQuoteDepthFirst() throws {
        let result = try parseResultSet(Self.nested)
        #expect(result == ResultSet(format: .twitter, urls: [
            "https://pbs.example/outer.jpg",
            "http://pbs.example/rt.jpg",
            "https://pbs.example/rtq.jpg",
            "https://pbs.example/q.jpg",
            "https://pbs.example/deep.jpg",
        ]))
        #expect(try parseResultSet(Self.nested, format: .twitter) == result)
    }

    @Test func userObjectWithEmbeddedStatus() throws {
        let body = """
            {"screen_name": "kesuke", "profile_image_url_https": "https://pbs.example/k.png",
             "status": {"text": "hi", "retweeted_status": {"user": {"profile_image_url_https": "https://pbs.example/r.png"}}}}
            """
        #expect(try parseResultSet(body).urls == ["https://pbs.example/k.png", "https://pbs.example/r.png"])
    }

    @Test func arraysOfUsersAndOfStatuses() throws {
        let users = #"[{"screen_name":"a","profile_image_url_https":"https://p/a"},{"screen_name":"b","profile_image_url_https":"https://p/b"},{"screen_name":"c","profile_image_url_https":"https://p/a"}]"#
        #expect(try parseResultSet(users) == ResultSet(format: .twitter, urls: ["https://p/a", "https://p/b"]))
        let statuses = #"[{"text":"1","user":{"profile_image_url_https":"https://p/1"}},{"text":"2","user":{"profile_image_url":"http://p/2"}}]"#
        #expect(try parseResultSet(statuses, format: .twitter).urls == ["https://p/1", "http://p/2"])
    }

    @Test func statusWithoutUserHasNoImageURLs() {
        let error = resultSetError(#"{"text":"orphan","id":5}"#)
        #expect(error?.code == .noImageURLs)
        #expect(error?.message == "Twitter status object has no image URLs")
    }

    @Test func errorBodies() {
        let single = resultSetError(#"{"errors": [{"message": "The specified user is not a subscriber of this list.", "code": 109}]}"#)
        #expect(single?.code == .apiError)
        #expect(single?.message == "Twitter API error 109: The specified user is not a subscriber of this list.")
        let double = resultSetError(#"{"errors":[{"code":88,"message":"Rate limit exceeded"},{"code":32,"message":"Nope"}]}"#,
                                format: .twitter)
        #expect(double?.code == .apiError)
        #expect(double?.message == "Twitter API error 88: Rate limit exceeded; error 32: Nope")
    }

    @Test func forcedTwitterOnSomethingElseIsAMismatch() {
        let error = resultSetError(ResultSetGitHubTests.users, format: .twitter)
        #expect(error?.code == .formatMismatch)
        #expect(error?.message.hasPrefix("expected a Twitter v1.1 user or status object") == true)
    }
}

// MARK: - URL lists

@Suite("ResultSet: URL lists")
struct ResultSetURLListTests {
    static let list = "# artwork to warm\n\n  https://img.example/a.png  \r\nhttp://img.example/b.jpg?x=1#frag\n\t\n"
        + "#https://img.example/commented.png\nhttps://img.example/a.png\nHTTPS://IMG.EXAMPLE/C.PNG\n"

    @Test func textWithCommentsBlankLinesAndDuplicates() throws {
        let expected = ResultSet(format: .urls, urls: [
            "https://img.example/a.png", "http://img.example/b.jpg?x=1#frag", "HTTPS://IMG.EXAMPLE/C.PNG",
        ])
        #expect(try parseResultSet(Self.list) == expected)
        #expect(try parseResultSet(Self.list, format: .urls) == expected)
    }

    @Test(arguments: [
        ("https://ok.example/1\n# c\nftp://files.example/x.png\n", 3),
        ("https://ok.example/1\nhttp:///no-host.png\n", 2),
        ("img/relative.png\n", 1),
        ("\n\nhttps://ok.example/a b.png\n", 3),
        ("https://ok.example/1\nmailto:someone@example.com", 2),
    ])
    func badLineNamesItsNumber(text: String, line: Int) {
        let error = resultSetError(text)
        #expect(error?.code == .invalidURL)
        #expect(error?.message.hasPrefix("line \(line): ") == true)
    }

    @Test func onlyCommentsOrEmptyBodyHaveNoImageURLs() {
        let comments = resultSetError("# nothing\n\n# here\n")
        #expect(comments?.code == .noImageURLs)
        #expect(comments?.message == "URL list with 3 lines has no image URLs")
        #expect(resultSetError("")?.code == .noImageURLs)
        #expect(resultSetError("   \n")?.code == .noImageURLs)
    }

    @Test func jsonArrayOfStrings() throws {
        let body = #"["https://img.example/1.png", " https://img.example/2.png ", "", 42, null, "https://img.example/1.png"]"#
        let expected = ResultSet(format: .urls, urls: ["https://img.example/1.png", "https://img.example/2.png"])
        #expect(try parseResultSet(body) == expected)
        #expect(try parseResultSet(body, format: .urls) == expected)
        let bad = resultSetError(#"["https://img.example/1.png", "nope"]"#)
        #expect(bad?.code == .invalidURL)
        #expect(bad?.message.contains("index 1") == true)
        #expect(resultSetError("[]")?.code == .noImageURLs)
    }

    @Test func forcedJSONFormatOnTextIsAMismatch() {
        let error = resultSetError("<html>\n<body>Service Unavailable</body>", format: .itunes)
        #expect(error?.code == .formatMismatch)
        #expect(error?.message == "expected an iTunes result set (`results` array) but found plain text (first line \"<html>\")")
    }

    @Test func forcedURLsOnJSONObjectIsAMismatch() {
        let error = resultSetError(ResultSetITunesTests.search, format: .urls)
        #expect(error?.code == .formatMismatch)
        #expect(error?.message.hasSuffix("but found an iTunes result set with 4 results") == true)
    }
}

// MARK: - Generic errors and API surface

@Suite("ResultSet: generic")
struct ResultSetGenericTests {
    @Test(arguments: [#"{"results": ["#, #"{"a" 1}"#, "[1, 2"])
    func invalidJSON(body: String) {
        let error = resultSetError(body)
        #expect(error?.code == .invalidJSON)
        #expect(error?.message.hasPrefix("invalid JSON: ") == true)
        #expect(resultSetError(body, format: .twitter)?.code == .invalidJSON)
    }

    @Test func unrecognizedObjectNamesFirstEightSortedKeys() {
        let error = resultSetError(#"{"zeta":1,"alpha":2,"mu":3,"beta":4,"gamma":5,"delta":6,"eps":7,"eta":8,"theta":9}"#)
        #expect(error?.code == .unrecognized)
        #expect(error?.message
            == "JSON object with keys [alpha, beta, delta, eps, eta, gamma, mu, theta, … +1 more] is not a known result set")
        #expect(resultSetError(#"{"b":1,"a":2}"#)?.message == "JSON object with keys [a, b] is not a known result set")
    }

    @Test func unrecognizedArray() {
        let error = resultSetError("[1, 2, 3]")
        #expect(error?.code == .unrecognized)
        #expect(error?.message == "JSON array of 3 elements (first is a number) is not a known result set")
    }

    @Test func formatRawValuesAndCodable() throws {
        #expect(ResultSetFormat.allCases.map(\.rawValue) == ["itunes", "github-users", "github-repos", "twitter", "urls"])
        let encoded = try JSONEncoder().encode(ResultSetFormat.githubRepos)
        #expect(String(decoding: encoded, as: UTF8.self) == #""github-repos""#)
        #expect(try JSONDecoder().decode(ResultSetFormat.self, from: encoded) == .githubRepos)
        #expect(ResultSetError.Code.formatMismatch.rawValue == "format_mismatch")
    }
}
