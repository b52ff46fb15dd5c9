import ArtCacheCore
import Foundation

extension ResultSetParser {
    // MARK: - iTunes

    /// Artwork keys in preference order; every present one is taken.
    static let iTunesArtworkKeys = ["artworkUrl100", "artworkUrl30", "artworkUrl60", "artworkUrl512", "artworkUrl600"]

    static func extractITunes(_ results: [Any]) throws(ResultSetError) -> ResultSet {
        var collector = URLCollector()
        for case let result as [String: Any] in results {
            for key in iTunesArtworkKeys {
                collector.add(result[key])
            }
            collector.addItem(iTunesArtworkKeys.map { result[$0] }, id: result["trackId"] ?? result["collectionId"] ?? result["artistId"])
        }
        return try finish(collector, .itunes,
                          empty: "iTunes result set with \(plural(results.count, "result")) has no image URLs")
    }

    // MARK: - GitHub

    static func extractGitHubUsers(_ items: [Any]) throws(ResultSetError) -> ResultSet {
        var collector = URLCollector()
        for case let item as [String: Any] in items {
            collector.add(item["avatar_url"])
            collector.addItem([item["avatar_url"]], id: item["id"])
        }
        return try finish(collector, .githubUsers,
                          empty: "GitHub users search result with \(plural(items.count, "item")) has no image URLs")
    }

    static func extractGitHubRepos(_ items: [Any]) throws(ResultSetError) -> ResultSet {
        var collector = URLCollector()
        for case let item as [String: Any] in items {
            collector.add((item["owner"] as? [String: Any])?["avatar_url"])
            collector.addItem([(item["owner"] as? [String: Any])?["avatar_url"]], id: item["id"])
        }
        return try finish(
            collector, .githubRepos,
            empty: "GitHub repositories search result with \(plural(items.count, "item")) has no image URLs")
    }

    /// HTTP statuses GitHub documents for its fixed error messages; the body itself carries no status.
    static let gitHubKnownStatuses: [String: Int] = [
        "Validation Failed": 422,
        "Not Found": 404,
        "Bad credentials": 401,
        "Requires authentication": 401,
    ]

    /// "GitHub API error: Validation Failed (422): q missing".
    static func gitHubErrorMessage(_ object: [String: Any]) -> String {
        let message = (object["message"] as? String ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        var text = "GitHub API error: \(message.isEmpty ? "(no message)" : message)"
        if let status = gitHubKnownStatuses[message] {
            text += " (\(status))"
        }
        var details: [String] = []
        for error in object["errors"] as? [Any] ?? [] {
            if let string = error as? String {
                details.append(string)
            } else if let error = error as? [String: Any] {
                // `code: "custom"` only says that `message` carries the explanation.
                let hasMessage = (error["message"] as? String).map { !$0.isEmpty } ?? false
                let parts = ["field", "code", "message"].compactMap { key -> String? in
                    guard let value = error[key] as? String, !value.isEmpty else { return nil }
                    return key == "code" && value == "custom" && hasMessage ? nil : value
                }
                if !parts.isEmpty { details.append(parts.joined(separator: " ")) }
            }
        }
        if !details.isEmpty {
            text += ": " + details.joined(separator: "; ")
        }
        return text
    }

    // MARK: - Twitter

    /// Nesting deeper than this (retweet of a quote of a retweet …) is ignored.
    static let twitterMaxDepth = 32

    static func extractTwitter(_ objects: [[String: Any]], wrapped: String?) throws(ResultSetError) -> ResultSet {
        var collector = URLCollector()
        for object in objects {
            // An item per top-level object: a user (its id) or a status (the
            // tweet's id, its author's avatar).
            let user = isTwitterUser(object) ? object : object["user"] as? [String: Any]
            collector.addItem([user?["profile_image_url_https"], user?["profile_image_url"]], id: object["id_str"] ?? object["id"])
            if isTwitterUser(object) {
                collectTwitterUser(object, into: &collector, depth: 0)
            } else {
                collectTwitterStatus(object, into: &collector, depth: 0)
            }
        }
        let kind = DocumentKind.twitter(objects: objects, wrapped: wrapped)
        return try finish(collector, .twitter, empty: "\(describe(kind, article: false)) has no image URLs")
    }

    /// The user's own avatar (https preferred), then its embedded `status`, depth first.
    private static func collectTwitterUser(_ user: [String: Any], into collector: inout URLCollector, depth: Int) {
        guard depth < twitterMaxDepth else { return }
        if let https = user["profile_image_url_https"] as? String,
           !https.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            collector.add(https)
        } else {
            collector.add(user["profile_image_url"])
        }
        if let status = user["status"] as? [String: Any] {
            collectTwitterStatus(status, into: &collector, depth: depth + 1)
        }
    }

    /// The status's `user`, then `retweeted_status`, then `quoted_status`, depth first.
    private static func collectTwitterStatus(_ status: [String: Any], into collector: inout URLCollector, depth: Int) {
        guard depth < twitterMaxDepth else { return }
        if let user = status["user"] as? [String: Any] {
            collectTwitterUser(user, into: &collector, depth: depth + 1)
        }
        for key in ["retweeted_status", "quoted_status"] {
            if let nested = status[key] as? [String: Any] {
                collectTwitterStatus(nested, into: &collector, depth: depth + 1)
            }
        }
    }

    /// "Twitter API error 109: …", several joined with "; ".
    static func twitterErrorMessage(_ errors: [Any]) -> String {
        let parts = errors.compactMap { element -> String? in
            guard let error = element as? [String: Any] else { return nil }
            let message = error["message"] as? String ?? "(no message)"
            if let code = error["code"] as? NSNumber {
                return "error \(code.stringValue): \(message)"
            }
            return "error: \(message)"
        }
        return "Twitter API " + (parts.isEmpty ? "error" : parts.joined(separator: "; "))
    }

    static func apiError(for kind: DocumentKind) -> ResultSetError {
        let message: String
        switch kind {
        case .githubError(let object): message = gitHubErrorMessage(object)
        case .twitterError(let errors): message = twitterErrorMessage(errors)
        case .itunesError(let text): message = "iTunes API error: \(text)"
        default: message = "API error: \(describe(kind, article: false))"
        }
        return ResultSetError(code: .apiError, message: message)
    }

    // MARK: - URL lists

    /// One URL per line; blank lines and `#` comments skipped; every other line validated.
    static func parseURLText(_ data: Data) throws(ResultSetError) -> ResultSet {
        guard var text = String(data: data, encoding: .utf8) else {
            throw ResultSetError(
                code: .unrecognized,
                message: "\(plural(data.count, "byte")) of non-UTF-8 data is not a known result set")
        }
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        if lines.last?.isEmpty == true { lines.removeLast() }
        var collector = URLCollector()
        for (offset, raw) in lines.enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if let problem = urlProblem(line) {
                throw ResultSetError(code: .invalidURL, message: "line \(offset + 1): \(problem)")
            }
            collector.add(line)
            collector.addItem([line], id: nil)
        }
        return try finish(collector, .urls,
                          empty: "URL list with \(plural(lines.count, "line")) has no image URLs")
    }

    /// A JSON array of URL strings; non-strings and empty strings skipped, others validated.
    static func extractURLArray(_ elements: [Any]) throws(ResultSetError) -> ResultSet {
        var collector = URLCollector()
        for (index, element) in elements.enumerated() {
            guard let string = element as? String else { continue }
            let value = string.trimmingCharacters(in: .whitespacesAndNewlines)
            if value.isEmpty { continue }
            if let problem = urlProblem(value) {
                throw ResultSetError(code: .invalidURL, message: "JSON array element at index \(index): \(problem)")
            }
            collector.add(value)
            collector.addItem([value], id: nil)
        }
        let kind = DocumentKind.urlArray(elements: elements)
        return try finish(collector, .urls, empty: "\(describe(kind, article: false)) has no image URLs")
    }

    /// Nil when `candidate` is an absolute http(s) URL with a host; otherwise why not.
    static func urlProblem(_ candidate: String) -> String? {
        let shown = candidate.count > 100 ? String(candidate.prefix(100)) + "…" : candidate
        let quoted = "\"\(shown)\""
        if candidate.unicodeScalars.contains(where: {
            CharacterSet.whitespacesAndNewlines.contains($0) || CharacterSet.controlCharacters.contains($0)
        }) {
            return "\(quoted) contains whitespace or control characters"
        }
        guard let url = URL(string: candidate), let scheme = url.scheme?.lowercased() else {
            return "\(quoted) is not an absolute URL"
        }
        guard scheme == "http" || scheme == "https" else {
            return "\(quoted) is not an http/https URL (scheme \(scheme))"
        }
        guard let host = url.host, !host.isEmpty else {
            return "\(quoted) has no host"
        }
        return nil
    }

    // MARK: -

    private static func finish(_ collector: URLCollector, _ format: ResultSetFormat,
                               empty message: @autoclosure () -> String) throws(ResultSetError) -> ResultSet {
        guard !collector.urls.isEmpty else {
            throw ResultSetError(code: .noImageURLs, message: message())
        }
        return ResultSet(format: format, urls: collector.urls, items: collector.items)
    }
}
