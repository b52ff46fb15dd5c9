import ArtCacheCore
import Foundation

/// `[profiles]`: the provider profiles that pick a source's rendition
/// (``ProviderProfile``), and how long a profile that failed a host is left
/// out for it.
public struct ProfileSettings: Sendable, Hashable {
    /// In the order they are tried (the first whose hosts and path match).
    /// The four built in first, unless a line of the same name replaces or
    /// (empty) removes one.
    package var profiles: [ProviderProfile] = ProviderProfile.builtIn
    /// When a rendition a profile chose fails (404, not an image), the URL
    /// given is fetched instead, and that profile is left out for that host
    /// this long.
    public var fallbackTTL: TimeInterval = 3600

    public init() {}

    /// The profiles' names, in the order they are tried.
    public var names: [String] { profiles.map(\.name) }

    /// Adds a profile, replaces the one of that name (a built-in one too) or,
    /// with an empty line, removes it. `line` has the `[profiles]` syntax
    /// (cache.conf), e.g. `"hosts=img.example.org size=query:w max=2000"`.
    public mutating func set(_ name: String, line: String) throws(ArtCacheError) {
        do {
            try apply(name, line: line)
        } catch {
            throw ArtCacheError(.configuration, "profiles.\(name): \(error.description)")
        }
    }

    /// ``set(_:line:)`` with the parser's own error (cache.conf names the
    /// file and key around it).
    package mutating func apply(_ name: String, line: String) throws(ProviderProfile.Invalid) {
        let index = profiles.firstIndex { $0.name == name }
        guard !line.trimmingCharacters(in: .whitespaces).isEmpty else {
            if let index { profiles.remove(at: index) }
            return
        }
        let profile = try ProviderProfile(name: name, text: line)
        if let index { profiles[index] = profile } else { profiles.append(profile) }
    }

    /// The URL to fetch for `url` when its largest output is `pixels` on
    /// its longer side: a profile's rendition, else `url` itself.
    public func rendition(of url: String, pixels: Int) -> String {
        guard let (profile, components) = match(url) else { return url }
        return profile.rendition(of: components, url: url, pixels: pixels)?.url ?? url
    }

    /// The profile for `url`, if any.
    package func profile(for url: String) -> ProviderProfile? {
        match(url)?.profile
    }

    /// The profile for `url` and the URL parsed (renditions read it again
    /// without parsing it again), if any.
    package func match(_ url: String) -> (profile: ProviderProfile, components: URLComponents)? {
        guard let components = URLComponents(string: url), let profile = profiles.first(where: { $0.matches(components) }) else {
            return nil
        }
        return (profile, components)
    }
}
