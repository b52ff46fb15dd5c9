import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

/// Provider profiles in the pipeline: a request that needs `pixels` (the
/// longer side of its largest output) fetches the rendition a profile
/// chooses (``ProviderProfile/rendition(of:pixels:)``) instead of the URL
/// given; the key stays the given URL's and the row records the URL fetched
/// and its size. A stored original smaller than a request needs is replaced
/// by the larger rendition (its variants go with the old bytes and are
/// rendered again on demand). A rendition that fails (4xx, not an image)
/// falls back to the URL given, and the profile is left out for that URL
/// (its key) for `[profiles] fallback_ttl`: one deleted avatar does not turn
/// the profile off for every image of its host. At most
/// ``profileFallbackMax`` URLs are remembered (expired ones go first).
extension Originals {
    /// What a request for `url` needing `pixels` fetches through a profile.
    struct RenditionPlan: Sendable {
        let profile: ProviderProfile
        /// The rendition to fetch (its URL and size; size nil: the original).
        let rendition: ProviderProfile.Rendition
        /// The size of the URL given (nil: unknown or the original).
        let givenSize: Int?

        var stored: CacheStore.FetchedRendition {
            CacheStore.FetchedRendition(url: rendition.url, rendition: rendition.size ?? CacheEntry.originalRendition)
        }
    }

    /// URLs whose failed rendition is remembered, at most.
    static let profileFallbackMax = 10_000

    /// The plan for `url` at `pixels`, or nil when no profile reads the URL,
    /// its rendition failed within `fallback_ttl`, or it would fetch the URL given.
    func renditionPlan(_ url: NormalizedURL, pixels: Int?) -> RenditionPlan? {
        // One parse of the URL for the match and both renditions.
        guard let pixels, let (profile, components) = configuration.profiles.match(url.string),
              !isFallenBack(profile, url: url),
              let rendition = profile.rendition(of: components, url: url.string, pixels: pixels) else { return nil }
        let given = profile.rendition(of: components, url: url.string, pixels: 0)?.size
        guard rendition.url != url.string else { return nil }
        return RenditionPlan(profile: profile, rendition: rendition, givenSize: given)
    }

    /// Whether a stored original is at least the plan's rendition.
    func holds(_ entry: CacheEntry, enoughFor plan: RenditionPlan) -> Bool {
        let stored = entry.rendition ?? plan.givenSize ?? CacheEntry.originalRendition
        return stored >= (plan.rendition.size ?? CacheEntry.originalRendition)
    }

    /// Downloads the plan's rendition; nil when it failed in a way that
    /// falls back to the URL given (an HTTP 4xx, or bytes that are not an
    /// image: remembered for the profile and URL). Network failures and
    /// cancellation are thrown.
    func fetchRendition(_ plan: RenditionPlan, for url: NormalizedURL, priority: PriorityHandle) async throws -> HTTPResponse? {
        do {
            let response = try await download(plan.rendition.url, validators: nil, priority: priority)
            if (200..<300).contains(response.status) {
                _ = try await Freshness.check(response.body, declaredType: response.headers["content-type"])
                return response
            }
            fallBack(plan.profile, for: url, reason: "HTTP \(response.status)", url: plan.rendition.url)
            return nil
        } catch let error as DownloadError where error.code == .httpStatus && (400..<500).contains(error.status ?? 0) {
            fallBack(plan.profile, for: url, reason: "HTTP \(error.status ?? 0)", url: plan.rendition.url)
            return nil
        } catch is Sniffer.Refusal {
            fallBack(plan.profile, for: url, reason: "not an image", url: plan.rendition.url)
            return nil
        }
    }

    private func fallBack(_ profile: ProviderProfile, for given: NormalizedURL, reason: String, url: String) {
        let until = Date().addingTimeInterval(configuration.profiles.fallbackTTL)
        profileFallbacks.withLock { fallbacks in
            if fallbacks.count >= Self.profileFallbackMax {
                let now = Date()
                fallbacks = fallbacks.filter { $0.value > now }
                if fallbacks.count >= Self.profileFallbackMax { fallbacks.removeAll() }
            }
            fallbacks[Self.fallbackKey(profile, given)] = until
        }
        logger.info("profile rendition failed: fetching the URL given", metadata: [
            "profile": "\(profile.name)", "given": "\(given)", "url": "\(url)", "reason": "\(reason)",
            "fallback_ttl": "\(configuration.profiles.fallbackTTL)"])
    }

    private func isFallenBack(_ profile: ProviderProfile, url: NormalizedURL) -> Bool {
        let key = Self.fallbackKey(profile, url)
        return profileFallbacks.withLock { fallbacks in
            guard let until = fallbacks[key] else { return false }
            if until > Date() { return true }
            fallbacks[key] = nil
            return false
        }
    }

    private static func fallbackKey(_ profile: ProviderProfile, _ url: NormalizedURL) -> String {
        profile.name + " " + url.key.hex
    }
}
