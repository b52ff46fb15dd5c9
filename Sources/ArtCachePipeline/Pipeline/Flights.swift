import ArtCacheCore
import ArtCacheStore
import Foundation

/// The flight of an original: requests with equal keys share one load.
/// Requests of different modes never share work, nor does a load that must
/// be fresh with one that may answer stale, nor loads of different
/// renditions; a revalidation behind an answer has flights of its own.
struct OriginalFlight: Hashable, Sendable {
    enum Purpose: Hashable, Sendable {
        case load(mode: FetchMode, staleOK: Bool, rendition: String?)
        case revalidation
    }

    var key: CacheKey
    var purpose: Purpose
}

/// The flight of a variant: one render per variant and mode.
struct VariantFlight: Hashable, Sendable {
    var key: CacheKey
    var mode: FetchMode
}
