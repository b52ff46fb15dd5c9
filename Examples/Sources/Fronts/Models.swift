import Foundation

/// One row a front shows: an image, a title, lines of text.
public struct FrontRow: Sendable, Equatable {
    /// The image URL as the API gives it: the pipeline's provider profiles
    /// fetch the sharper rendition a 2× screen needs.
    public var imageURL: String?
    public var title: String
    public var subtitle: String
    public var detail: String

    public init(imageURL: String?, title: String, subtitle: String = "", detail: String = "") {
        self.imageURL = imageURL
        self.title = title
        self.subtitle = subtitle
        self.detail = detail
    }
}

/// The API answers the fronts read, decoded leniently (missing fields are
/// empty, never a failure of the whole page).
enum APIModels {
    struct ITunesSearch: Decodable {
        struct Item: Decodable {
            var artworkUrl100: String?
            var artistName: String?
            var collectionName: String?
            var trackName: String?
            var kind: String?
            var wrapperType: String?
        }
        var results: [Item]
    }

    struct GitHubSearch<Item: Decodable>: Decodable {
        var items: [Item]
    }

    struct GitHubOwner: Decodable {
        var login: String?
        var avatar_url: String?
    }

    struct GitHubRepo: Decodable {
        var full_name: String?
        var description: String?
        var stargazers_count: Int?
        var owner: GitHubOwner?
    }

    final class Tweet: Decodable {
        struct User: Decodable {
            var name: String?
            var screen_name: String?
            var profile_image_url_https: String?
        }
        var full_text: String?
        var text: String?
        var created_at: String?
        var user: User?
        var retweeted_status: Tweet?
        var quoted_status: Tweet?
    }
}

extension APIModels {
    static func itunesRows(_ data: Data) throws -> [FrontRow] {
        try JSONDecoder().decode(ITunesSearch.self, from: data).results.map { item in
            FrontRow(imageURL: item.artworkUrl100, title: item.trackName ?? item.collectionName ?? "",
                     subtitle: item.artistName ?? "",
                     detail: item.trackName != nil ? (item.collectionName ?? "") : (item.kind ?? item.wrapperType ?? ""))
        }
    }

    static func repoRows(_ data: Data) throws -> [FrontRow] {
        try JSONDecoder().decode(GitHubSearch<GitHubRepo>.self, from: data).items.map { repo in
            FrontRow(imageURL: repo.owner?.avatar_url, title: repo.full_name ?? "", subtitle: repo.description ?? "",
                     detail: "★ \(repo.stargazers_count ?? 0)")
        }
    }

    static func userRows(_ data: Data) throws -> [FrontRow] {
        try JSONDecoder().decode(GitHubSearch<GitHubOwner>.self, from: data).items.map { user in
            FrontRow(imageURL: user.avatar_url, title: user.login ?? "")
        }
    }

    /// Statuses with their retweeted and quoted statuses as rows of their own (nested ones included).
    static func timelineRows(_ data: Data) throws -> [FrontRow] {
        var rows: [FrontRow] = []
        func add(_ tweet: Tweet, depth: Int) {
            let prefix = depth == 0 ? "" : "↳ "
            rows.append(FrontRow(imageURL: tweet.user?.profile_image_url_https, title: prefix + (tweet.user?.name ?? ""),
                                 subtitle: "@" + (tweet.user?.screen_name ?? "") + " · " + (tweet.created_at ?? ""),
                                 detail: tweet.full_text ?? tweet.text ?? ""))
            if depth < 3 {
                if let retweet = tweet.retweeted_status { add(retweet, depth: depth + 1) }
                if let quote = tweet.quoted_status { add(quote, depth: depth + 1) }
            }
        }
        for tweet in try JSONDecoder().decode([Tweet].self, from: data) { add(tweet, depth: 0) }
        return rows
    }
}
