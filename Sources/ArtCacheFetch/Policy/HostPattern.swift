import ArtCacheCore
import Foundation

/// One entry of `[download] allowed_sources`: `example.com` (that host only),
/// `*.example.com` (its subdomains, not the apex) or `*` (any host).
/// Matching ignores case and a trailing dot; an IP address matches in any
/// spelling of it (`[::1]`, `::1` and `0:0::1` are one; IPv4 as a dotted
/// quad), as hosts are compared in the spelling `NormalizedURL` gives them.
public struct HostPattern: Sendable, Hashable, CustomStringConvertible {
    public let description: String
    private let suffix: String?  // "*.example.com" → ".example.com"; "*" → ""
    private let exact: String?

    /// nil when malformed (empty, a wildcard other than a leading `*.`, a scheme or a path).
    public init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.hasSuffix("*.") else { return nil }
        let lowered = Self.canonical(trimmed)
        guard !lowered.isEmpty, !lowered.contains("/"), !lowered.contains("@"), !lowered.contains(" ") else { return nil }
        description = lowered
        if lowered == "*" {
            suffix = ""
            exact = nil
        } else if lowered.hasPrefix("*.") {
            let rest = String(lowered.dropFirst(1))
            guard rest.count > 1, !rest.dropFirst().contains("*") else { return nil }
            suffix = rest
            exact = nil
        } else {
            guard !lowered.contains("*") else { return nil }
            suffix = nil
            exact = lowered
        }
    }

    public func matches(host: String) -> Bool {
        let host = Self.canonical(host)
        if let exact { return host == exact }
        guard let suffix else { return false }
        return suffix.isEmpty || (host.hasSuffix(suffix) && host.count > suffix.count)
    }

    private static func canonical(_ host: String) -> String {
        var host = host.lowercased()
        while host.hasSuffix(".") { host.removeLast() }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return IPAddress(bare)?.description ?? host
    }
}

/// The hosts sources may come from: any public host when `patterns` is
/// empty, else only hosts one of them matches. Checked on the request's URL
/// and on every redirect's `Location` before it is followed; the address
/// check (`AddressPolicy`) applies on top.
package struct SourcePolicy: Sendable, Equatable {
    package var patterns: [HostPattern]

    package init(patterns: [HostPattern] = []) { self.patterns = patterns }

    package func allows(host: String) -> Bool {
        patterns.isEmpty || patterns.contains { $0.matches(host: host) }
    }

    /// Whether a redirect may go to `host`, as libcurl read it from the
    /// `Location` (`RedirectTarget`), put in the spelling the request's own
    /// host is checked in (`NormalizedURL`: lower case, no trailing dot,
    /// IPv4 as a dotted quad, IPv6 without brackets). A host with no such
    /// spelling (characters no host name holds, Unicode: list punycode)
    /// matches no pattern: what cannot be checked is refused.
    package func allows(libcurlHost host: String) -> Bool {
        guard !patterns.isEmpty else { return true }
        guard let canonical = try? NormalizedURL.canonicalHost(host, url: host) else { return false }
        return allows(host: canonical)
    }

    /// Whether an absolute URL's host is allowed (a URL without a host is not).
    package func allows(url: String) -> Bool {
        guard !patterns.isEmpty else { return true }
        guard let host = URLComponents(string: url)?.host else { return false }
        return allows(host: host)
    }
}
