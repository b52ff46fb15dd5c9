import ArtCacheCore
import Foundation

/// The kinds of API result set the prefetcher knows how to mine for image URLs.
///
/// The raw values are the names used on the command line and in configuration.
public enum ResultSetFormat: String, Sendable, CaseIterable, Codable {
    /// iTunes Search / Lookup API: `results[].artworkUrl100` (then 30, 60, 512, 600).
    case itunes
    /// GitHub Search Users API: `items[].avatar_url`.
    case githubUsers = "github-users"
    /// GitHub Search Repositories API: `items[].owner.avatar_url`.
    case githubRepos = "github-repos"
    /// Twitter v1.1 user / status objects (or arrays of them): `profile_image_url_https`.
    case twitter
    /// Plain text, one absolute http(s) URL per line (`#` comments and blank lines ignored),
    /// or a JSON array of URL strings.
    case urls
}

/// The image URLs found in one API result set.
public struct ResultSet: Sendable, Equatable {
    /// The format the document was parsed as (detected or forced).
    public let format: ResultSetFormat
    /// Image URLs in result order, whitespace-trimmed and deduplicated
    /// (exact string comparison, first occurrence wins). Never empty.
    public let urls: [String]
    /// One per result that has an image, in result order (a manifest's
    /// items): its image URL (the one a page shows: `artworkUrl100` before
    /// the other sizes, a status's author's avatar) and the result's id
    /// (track, repository, user or tweet id) where the result set has one.
    public let items: [Item]

    /// A result with an image.
    public struct Item: Sendable, Equatable {
        public let url: String
        public let id: String?

        public init(url: String, id: String?) {
            self.url = url
            self.id = id
        }
    }

    /// Creates a result set; `urls` are taken as given (one item each, without ids).
    public init(format: ResultSetFormat, urls: [String]) {
        self.init(format: format, urls: urls, items: urls.map { Item(url: $0, id: nil) })
    }

    package init(format: ResultSetFormat, urls: [String], items: [Item]) {
        self.format = format
        self.urls = urls
        self.items = items
    }
}

/// Why a document could not be turned into a list of image URLs.
public struct ResultSetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Machine-readable error category; the raw value is stable and snake_case.
    public enum Code: String, Sendable {
        /// The body starts like JSON but JSONSerialization rejected it.
        case invalidJSON = "invalid_json"
        /// The body is an error response from the API (GitHub, Twitter or iTunes).
        case apiError = "api_error"
        /// The format was recognised but it holds no usable image URL.
        case noImageURLs = "no_image_urls"
        /// Valid JSON (or bytes) that is not any known result set.
        case unrecognized = "unrecognized"
        /// A format was forced and the document is something else.
        case formatMismatch = "format_mismatch"
        /// A URL list line (or array element) is not an absolute http(s) URL with a host.
        case invalidURL = "invalid_url"
    }

    /// The error category.
    public let code: Code
    /// Human-readable explanation naming what was found.
    public let message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// Same as `message`.
    public var description: String { message }
}

extension ResultSet {
    /// Parses `data`, an API response body (iTunes, GitHub search, Twitter
    /// v1.1) or a URL list, into the ordered, deduplicated image URLs worth
    /// prefetching.
    ///
    /// Auto-detects the format unless `format` is given. A body whose first
    /// non-whitespace character is neither `{` nor `[` is read as a plain-text URL list.
    /// When `format` is given and the document is something else, throws
    /// `formatMismatch` — except that an API error body from the forced format's own
    /// API is reported as `apiError`.
    ///
    /// - Throws: `ResultSetError` with code `invalidJSON`, `apiError`, `noImageURLs`,
    ///   `unrecognized`, `formatMismatch` or `invalidURL`.
    public static func parse(_ data: Data, format: ResultSetFormat? = nil) throws(ResultSetError) -> ResultSet {
        try ResultSetParser.parse(data, format: format)
    }
}

/// The parser behind ``ResultSet/parse(_:format:)``: format detection and
/// one extractor per API.
package enum ResultSetParser {
    package static func parse(_ data: Data, format: ResultSetFormat? = nil) throws(ResultSetError) -> ResultSet {
        guard let first = firstSignificantByte(data), first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else {
            // Not JSON-looking: a plain-text URL list.
            if let format, format != .urls {
                throw ResultSetError(
                    code: .formatMismatch,
                    message: "expected \(expectation(for: format)) but found \(describeText(data))")
            }
            return try parseURLText(data)
        }

        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: data, options: [])
        } catch {
            let ns = error as NSError
            let reason = ns.userInfo[NSDebugDescriptionErrorKey] as? String ?? ns.localizedDescription
            throw ResultSetError(code: .invalidJSON, message: "invalid JSON: \(reason)")
        }

        let kind = classify(json)
        if let format {
            return try extractForced(kind, format: format)
        }
        return try extractDetected(kind)
    }

    // MARK: - Dispatch

    private static func extractDetected(_ kind: DocumentKind) throws(ResultSetError) -> ResultSet {
        switch kind {
        case .itunes(let results):
            return try extractITunes(results)
        case .githubSearch(let items, .users):
            return try extractGitHubUsers(items)
        case .githubSearch(let items, .repos):
            return try extractGitHubRepos(items)
        case .githubSearch(let items, .empty):
            throw ResultSetError(
                code: .noImageURLs,
                message: "GitHub search result with \(plural(items.count, "item")) has no image URLs")
        case .githubSearch(let items, .unknown):
            throw ResultSetError(
                code: .unrecognized,
                message: "GitHub search result with \(plural(items.count, "item")) is neither a users nor a "
                    + "repositories search (first item has keys \(keyList(firstObjectKeys(items))))")
        case .twitter(let objects, let wrapped):
            return try extractTwitter(objects, wrapped: wrapped)
        case .urlArray(let elements):
            return try extractURLArray(elements)
        case .itunesError, .githubError, .twitterError:
            throw apiError(for: kind)
        case .unknownObject, .unknownArray:
            throw ResultSetError(code: .unrecognized, message: "\(describe(kind, article: false)) is not a known result set")
        }
    }

    private static func extractForced(_ kind: DocumentKind, format: ResultSetFormat) throws(ResultSetError) -> ResultSet {
        switch (format, kind) {
        case (.itunes, .itunes(let results)):
            return try extractITunes(results)
        case (.itunes, .itunesError):
            throw apiError(for: kind)
        case (.githubUsers, .githubSearch(let items, let shape)) where shape != .repos:
            return try extractGitHubUsers(items)
        case (.githubRepos, .githubSearch(let items, let shape)) where shape != .users:
            return try extractGitHubRepos(items)
        case (.githubUsers, .githubError), (.githubRepos, .githubError):
            throw apiError(for: kind)
        case (.twitter, .twitter(let objects, let wrapped)):
            return try extractTwitter(objects, wrapped: wrapped)
        case (.twitter, .twitterError):
            throw apiError(for: kind)
        case (.urls, .urlArray(let elements)):
            return try extractURLArray(elements)
        default:
            throw ResultSetError(
                code: .formatMismatch,
                message: "expected \(expectation(for: format)) but found \(describe(kind, article: true))")
        }
    }

    /// What a forced format expects, for `formatMismatch` messages.
    static func expectation(for format: ResultSetFormat) -> String {
        switch format {
        case .itunes: return "an iTunes result set (`results` array)"
        case .githubUsers: return "a GitHub users search result (`items[].avatar_url`)"
        case .githubRepos: return "a GitHub repositories search result (`items[].owner.avatar_url`)"
        case .twitter: return "a Twitter v1.1 user or status object (or an array of them)"
        case .urls: return "a URL list (one URL per line, or a JSON array of strings)"
        }
    }

    // MARK: - Shared helpers

    /// The first byte that is not whitespace or a UTF-8 byte-order mark.
    static func firstSignificantByte(_ data: Data) -> UInt8? {
        var index = data.startIndex
        if data.count >= 3, data[index] == 0xEF, data[index + 1] == 0xBB, data[index + 2] == 0xBF {
            index += 3
        }
        while index < data.endIndex {
            let byte = data[index]
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C: index += 1
            default: return byte
            }
        }
        return nil
    }

    /// "1 item", "0 items", "3 items".
    static func plural(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }

    /// `[a, b, c]` — the first 8 keys sorted, with a note when there are more.
    static func keyList(_ keys: [String]) -> String {
        let sorted = keys.sorted()
        let shown = sorted.prefix(8).joined(separator: ", ")
        let more = sorted.count > 8 ? ", … +\(sorted.count - 8) more" : ""
        return "[\(shown)\(more)]"
    }

    /// Keys of the first dictionary element, for diagnostics.
    static func firstObjectKeys(_ elements: [Any]) -> [String] {
        for element in elements {
            if let object = element as? [String: Any] { return Array(object.keys) }
        }
        return []
    }

    /// Accumulates trimmed, non-empty string values, dropping repeats.
    struct URLCollector {
        private(set) var urls: [String] = []
        private var seen: Set<String> = []
        /// The results' items (ResultSet.items), in result order.
        var items: [ResultSet.Item] = []

        /// Adds an item for a result: its first image URL of `candidates` (a
        /// non-empty string) and its id (a string or a number).
        mutating func addItem(_ candidates: [Any?], id: Any?) {
            let url = candidates.lazy.compactMap { ($0 as? String)?.trimmingWhitespace(newlines: true) }
                .first { !$0.isEmpty }
            guard let url else { return }
            let text: String? = switch id {
            case let string as String: string.isEmpty ? nil : string
            case let number as NSNumber: number.stringValue
            default: nil
            }
            items.append(ResultSet.Item(url: url, id: text))
        }

        /// Adds `value` if it is a non-empty string (after trimming) not seen before.
        mutating func add(_ value: Any?) {
            guard let string = value as? String else { return }
            let trimmed = string.trimmingWhitespace(newlines: true)
            guard !trimmed.isEmpty, seen.insert(trimmed).inserted else { return }
            urls.append(trimmed)
        }
    }
}
