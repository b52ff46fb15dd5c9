import ArtCacheCore
import Foundation

extension ResultSetParser {
    /// How a GitHub search `items` array looks.
    enum GitHubItemShape: Equatable {
        /// Items carry `avatar_url` / `login`: Search Users.
        case users
        /// Items carry an `owner` object: Search Repositories.
        case repos
        /// No items at all: users and repositories look the same.
        case empty
        /// Items of some other search (code, issues, …).
        case unknown
    }

    /// What a parsed JSON document turned out to be.
    enum DocumentKind {
        case itunes(results: [Any])
        case itunesError(message: String)
        case githubSearch(items: [Any], shape: GitHubItemShape)
        case githubError(object: [String: Any])
        case twitterError(errors: [Any])
        /// Twitter users/statuses; `wrapped` names the container (`"statuses"`, `"users"`) or is nil.
        case twitter(objects: [[String: Any]], wrapped: String?)
        case urlArray(elements: [Any])
        case unknownObject(keys: [String])
        case unknownArray(count: Int, firstType: String)
    }

    /// Recognises the document's shape without extracting anything.
    static func classify(_ json: Any) -> DocumentKind {
        if let object = json as? [String: Any] {
            return classifyObject(object)
        }
        if let array = json as? [Any] {
            return classifyArray(array)
        }
        return .unknownArray(count: 0, firstType: jsonTypeName(json))
    }

    private static func classifyObject(_ object: [String: Any]) -> DocumentKind {
        if let results = object["results"] as? [Any] {
            return .itunes(results: results)
        }
        if let items = object["items"] as? [Any] {
            let shape = gitHubShape(items)
            if object["total_count"] != nil || shape == .users || shape == .repos {
                return .githubSearch(items: items, shape: shape)
            }
        }
        if let message = object["errorMessage"] as? String, object["items"] == nil {
            return .itunesError(message: message)
        }
        if let errors = object["errors"] as? [Any], object["message"] == nil,
           errors.contains(where: { ($0 as? [String: Any])?["code"] is NSNumber }) {
            return .twitterError(errors: errors)
        }
        if object["message"] is String, object["items"] == nil, !isTwitterUser(object), !isTwitterStatus(object) {
            return .githubError(object: object)
        }
        for container in ["statuses", "users"] {
            if let list = object[container] as? [Any] {
                let objects = list.compactMap { $0 as? [String: Any] }
                if objects.contains(where: { isTwitterUser($0) || isTwitterStatus($0) })
                    || (list.isEmpty && (object["search_metadata"] != nil || object["next_cursor"] != nil)) {
                    return .twitter(objects: objects, wrapped: container)
                }
            }
        }
        if isTwitterUser(object) || isTwitterStatus(object) {
            return .twitter(objects: [object], wrapped: nil)
        }
        return .unknownObject(keys: Array(object.keys))
    }

    private static func classifyArray(_ array: [Any]) -> DocumentKind {
        // Decide by the first non-null element; elements of another type are skipped later.
        guard let first = array.first(where: { !($0 is NSNull) }) else {
            return .urlArray(elements: array)
        }
        if first is String {
            return .urlArray(elements: array)
        }
        if let object = first as? [String: Any], isTwitterUser(object) || isTwitterStatus(object) {
            return .twitter(objects: array.compactMap { $0 as? [String: Any] }, wrapped: nil)
        }
        return .unknownArray(count: array.count, firstType: jsonTypeName(first))
    }

    static func gitHubShape(_ items: [Any]) -> GitHubItemShape {
        if items.isEmpty { return .empty }
        for case let item as [String: Any] in items {
            if item["owner"] is [String: Any] { return .repos }
            if item["avatar_url"] != nil || item["login"] != nil { return .users }
        }
        return .unknown
    }

    /// A Twitter v1.1 user object.
    static func isTwitterUser(_ object: [String: Any]) -> Bool {
        object["profile_image_url_https"] != nil || object["screen_name"] != nil
    }

    /// A Twitter v1.1 status (tweet) object.
    static func isTwitterStatus(_ object: [String: Any]) -> Bool {
        object["user"] is [String: Any] || object["text"] is String || object["full_text"] is String
    }

    static func jsonTypeName(_ value: Any) -> String {
        switch value {
        case is String: return "a string"
        case is [String: Any]: return "an object"
        case is [Any]: return "an array"
        case is NSNull: return "null"
        case let number as NSNumber:
            // JSONSerialization returns booleans as NSNumbers of ObjC type `c` (char).
            return String(cString: number.objCType) == "c" ? "a boolean" : "a number"
        default: return "a \(type(of: value))"
        }
    }

    // MARK: - Descriptions

    /// A noun phrase for what was found, e.g. "a GitHub users search result with 30 items".
    static func describe(_ kind: DocumentKind, article: Bool) -> String {
        let phrase: String
        switch kind {
        case .itunes(let results):
            phrase = "iTunes result set with \(plural(results.count, "result"))"
        case .itunesError(let message):
            phrase = "iTunes API error body (\"\(message)\")"
        case .githubSearch(let items, let shape):
            let which: String
            switch shape {
            case .users: which = "GitHub users search result"
            case .repos: which = "GitHub repositories search result"
            case .empty, .unknown: which = "GitHub search result"
            }
            phrase = "\(which) with \(plural(items.count, "item"))"
        case .githubError(let object):
            phrase = "GitHub API error body (\"\(object["message"] as? String ?? "")\")"
        case .twitterError:
            phrase = "Twitter API error body"
        case .twitter(let objects, let wrapped):
            if let wrapped {
                phrase = "Twitter `\(wrapped)` list with \(plural(objects.count, "object"))"
            } else if objects.count == 1, let only = objects.first {
                phrase = isTwitterUser(only) ? "Twitter user object" : "Twitter status object"
            } else {
                phrase = "JSON array of \(plural(objects.count, "Twitter object"))"
            }
        case .urlArray(let elements):
            phrase = elements.isEmpty ? "empty JSON array" : "JSON array of \(plural(elements.count, "string"))"
        case .unknownObject(let keys):
            phrase = keys.isEmpty ? "empty JSON object" : "JSON object with keys \(keyList(keys))"
        case .unknownArray(let count, let firstType):
            phrase = "JSON array of \(plural(count, "element")) (first is \(firstType))"
        }
        guard article else { return phrase }
        let vowel = phrase.first.map { "aeiouAEIO".contains($0) } ?? false
        return (vowel ? "an " : "a ") + phrase
    }

    /// "plain text (first line "…")" for a body that is not JSON.
    static func describeText(_ data: Data) -> String {
        guard let text = String(data: data, encoding: .utf8) else {
            return "\(plural(data.count, "byte")) of non-UTF-8 data"
        }
        let firstLine = text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .first(where: { !$0.isEmpty })
        guard let firstLine else { return "an empty body" }
        let shown = firstLine.count > 60 ? String(firstLine.prefix(60)) + "…" : firstLine
        return "plain text (first line \"\(shown)\")"
    }
}
