import ArtCacheCore
import Foundation

/// How to ask an origin for another rendition of an artwork or avatar URL:
/// the smallest source at least as large as the biggest output asked for
/// (never smaller than the URL given, never larger than the original).
/// Data, not code paths: a line of `[profiles]` in cache.conf
/// (``init(name:text:)``); four are built in (``builtIn``).
///
/// ```toml
/// [profiles]
/// itunes = "hosts=*.mzstatic.com size=dimensions max=3000"
/// ```
///
/// A profile matches by host (scheme and port do not matter) and, with
/// `path=`, a text the URL's path contains; it applies only to a URL its
/// size rule can read (an iTunes URL without `{W}x{H}` in its last path
/// segment is fetched as given).
package struct ProviderProfile: Sendable, Hashable {
    /// How a URL names its size.
    package enum SizeRule: Sendable, Hashable {
        /// A query parameter (`s=460`): any size from 1 to `max`; `absent` is
        /// the size the origin gives without it (nil: the original).
        case query(name: String, absent: Int?)
        /// `{W}x{H}` in the last path segment (`100x100bb.jpg`): any size up
        /// to `max`, the aspect ratio kept.
        case dimensions
        /// A ladder of suffixes at the end of the last path segment's stem
        /// (`_normal.jpg`), smallest first; a size of nil is the original
        /// (the empty suffix: no suffix at all).
        case suffixes([Step])
    }

    /// One rung of a ``SizeRule/suffixes(_:)`` ladder.
    package struct Step: Sendable, Hashable {
        package let suffix: String
        /// Pixels on the longer side; nil: the original (any size).
        package let size: Int?

        package init(suffix: String, size: Int?) {
            self.suffix = suffix
            self.size = size
        }
    }

    /// A rendition a profile chose.
    package struct Rendition: Sendable, Hashable {
        /// The URL to fetch.
        package let url: String
        /// Its size (longer side, pixels); nil: the original.
        package let size: Int?
    }

    package let name: String
    package let hosts: [HostPattern]
    /// Text the URL's path must contain (nil: any path).
    package let pathContains: String?
    package let rule: SizeRule
    /// The largest size a `query` or `dimensions` rule asks for.
    package let max: Int

    package init(name: String, hosts: [HostPattern], pathContains: String? = nil, rule: SizeRule, max: Int = 4096) {
        self.name = name
        self.hosts = hosts
        self.pathContains = pathContains
        self.rule = rule
        self.max = max
    }

    /// The four built in (documented in cache.conf and docs/provider-profiles.md): iTunes
    /// artwork, Twitter/X profile images, GitHub avatars, Gravatar.
    package static let builtIn: [ProviderProfile] = [
        try! ProviderProfile(name: "itunes", text: "hosts=*.mzstatic.com size=dimensions max=3000"),
        try! ProviderProfile(name: "twitter", text: "hosts=pbs.twimg.com,pbs-0.twimg.com path=/profile_images/ "
                             + "size=suffixes:_mini=24,_normal=48,_bigger=73,_400x400=400,=original"),
        try! ProviderProfile(name: "github", text: "hosts=avatars.githubusercontent.com size=query:s:460 max=460"),
        try! ProviderProfile(name: "gravatar", text: "hosts=gravatar.com,*.gravatar.com path=/avatar/ size=query:s:80 max=2048"),
    ]

    /// Whether this profile is the one for `url` (host and path; the size
    /// rule may still not read it).
    package func matches(_ url: URLComponents) -> Bool {
        guard let host = url.host, hosts.contains(where: { $0.matches(host: host) }) else { return false }
        return pathContains.map { url.percentEncodedPath.contains($0) } ?? true
    }

    /// The rendition of `url` for an output of `pixels` on its longer side:
    /// the smallest at least max(pixels, the URL's own size), capped by the
    /// original; nil when this profile does not read `url`. The URL given
    /// itself when it is already that rendition.
    package func rendition(of url: String, pixels: Int) -> Rendition? {
        guard let components = URLComponents(string: url), matches(components) else { return nil }
        return rendition(of: components, url: url, pixels: pixels)
    }

    /// ``rendition(of:pixels:)`` of a URL already parsed into `parsed` and
    /// matched (``ProfileSettings/match(_:)``): one parse for a plan.
    package func rendition(of parsed: URLComponents, url: String, pixels: Int) -> Rendition? {
        var components = parsed
        switch rule {
        case .query(let name, let absent):
            let items = components.percentEncodedQueryItems ?? []
            let given = items.last(where: { $0.name == name }).map { Int($0.value ?? "") }
            if case .some(.none) = given { return nil }  // s=abc: not a size this rule reads
            let named = given.flatMap { $0 }
            guard let current = named ?? absent else { return Rendition(url: url, size: nil) }
            // A URL that names no size (GitHub's `avatar_url`: the origin's
            // default, `absent`) was not sized by anyone: the rendition is
            // the one the output needs, smaller than the default too. A size
            // the URL names is a floor (never below what was given).
            let size = named == nil && pixels > 0 ? Swift.min(max, pixels) : Swift.min(max, Swift.max(current, pixels))
            guard size != current else { return Rendition(url: url, size: current) }
            components.percentEncodedQueryItems = items.filter { $0.name != name } + [URLQueryItem(name: name, value: String(size))]
            return components.string.map { Rendition(url: $0, size: size) }
        case .dimensions:
            let path = components.percentEncodedPath
            let segmentStart = path.lastIndex(of: "/").map(path.index(after:)) ?? path.startIndex
            guard let match = path[segmentStart...].firstMatch(of: /(\d{1,5})x(\d{1,5})/),
                  let width = Int(match.output.1), let height = Int(match.output.2), width > 0, height > 0 else { return nil }
            let current = Swift.max(width, height)
            let size = Swift.min(max, Swift.max(current, pixels))
            guard size != current else { return Rendition(url: url, size: current) }
            let scale = Double(size) / Double(current)
            let newWidth = Swift.max(1, Int((Double(width) * scale).rounded()))
            let newHeight = Swift.max(1, Int((Double(height) * scale).rounded()))
            components.percentEncodedPath = String(path[..<match.range.lowerBound]) + "\(newWidth)x\(newHeight)"
                + String(path[match.range.upperBound...])
            return components.string.map { Rendition(url: $0, size: size) }
        case .suffixes(let steps):
            let path = components.percentEncodedPath
            let segmentStart = path.lastIndex(of: "/").map(path.index(after:)) ?? path.startIndex
            let segment = path[segmentStart...]
            let stemEnd = segment.lastIndex(of: ".") ?? segment.endIndex
            let stem = segment[..<stemEnd]
            // The longest suffix the stem ends with (the empty one, the original, last).
            guard let current = steps.filter({ stem.hasSuffix($0.suffix) && stem.count > $0.suffix.count })
                .max(by: { $0.suffix.count < $1.suffix.count }) else { return nil }
            let floor = current.size.map { Swift.max($0, pixels) }
            let chosen = floor.flatMap { floor in steps.first { ($0.size ?? .max) >= floor } } ?? current
            guard chosen != current else { return Rendition(url: url, size: current.size) }
            let base = stem.dropLast(current.suffix.count)
            components.percentEncodedPath = String(path[..<segmentStart]) + base + chosen.suffix + String(segment[stemEnd...])
            return components.string.map { Rendition(url: $0, size: chosen.size) }
        }
    }
}
