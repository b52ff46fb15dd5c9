import Foundation

/// An endpoint the operator configures, as opposed to an origin a user
/// names: the ring's front door (`[service] front_url`, `prefetch --via`)
/// and the second tier's object store (`[tier2] endpoint`). Both are asked
/// through ``Downloader/endpoint(_:priority:)``; both are checked and kept
/// here, by one rule.
package enum OperatorEndpoint {
    /// `text` as kept: "" stays "" (none configured); otherwise an http or
    /// https URL of a host (a port allowed), with no user, password, query
    /// or fragment, and no path unless `allowingPath` (a front may sit
    /// under a path prefix; an object store is addressed at its root),
    /// trimmed, without its trailing `/` (request paths start with one).
    /// nil when it is not such a URL.
    package static func url(_ text: String, allowingPath: Bool) -> String? {
        var url = text.trimmingCharacters(in: .whitespaces)
        guard !url.isEmpty else { return "" }
        while url.hasSuffix("/") { url.removeLast() }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
              components.user == nil, components.password == nil, components.query == nil, components.fragment == nil,
              allowingPath || components.path.isEmpty
        else { return nil }
        return url
    }
}
