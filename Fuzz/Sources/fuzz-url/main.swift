// NormalizedURL: every URL the cache keys on goes through it.
@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
import Foundation
import FuzzSupport

runFuzzer { data in
    let input = text(data)
    guard let url = try? NormalizedURL(input) else { return }
    require(url.scheme == "http" || url.scheme == "https", "scheme \(shown(url.scheme))")
    require(!url.host.isEmpty, "empty host in \(shown(url.string))")
    require(url.string.hasPrefix(url.scheme + "://"), "\(shown(url.string)) does not start with its scheme")
    require(!url.string.unicodeScalars.contains { CharacterSet.whitespacesAndNewlines.contains($0) || CharacterSet.controlCharacters.contains($0) },
            "whitespace or control characters in \(shown(url.string))")
    // Idempotent: the normalized spelling normalizes to itself.
    let again: NormalizedURL
    do {
        again = try NormalizedURL(url.string)
    } catch {
        fatalError("invariant failed: \(shown(input)) normalized to \(shown(url.string)), which is refused: \(error)")
    }
    require(again == url, "not idempotent: \(shown(input)) → \(shown(url.string)) → \(shown(again.string)) (host \(shown(url.host)) → \(shown(again.host)))")
    require(again.key == url.key, "cache keys differ for \(shown(url.string))")
}
