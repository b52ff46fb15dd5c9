import ArtCacheCore
import ArtCacheStore
import ArtCacheTier

/// The pipeline's work behind answers (``BackgroundScheduler`` runs it; the
/// pipeline declares it), and every kind its scheduler runs.
extension BackgroundKind {
    /// A conditional GET behind a stale answer (within stale-while-revalidate).
    package static let revalidation = BackgroundKind("revalidation")
    /// An original's size and placeholder, for a row stored without them.
    package static let placeholder = BackgroundKind("placeholder")
    /// A manifest's pending item fetched (with its thumbnails) before it is asked for.
    package static let warmUp = BackgroundKind("warm_up")
    /// A better format of a stored thumbnail, made when it pays. Optional
    /// work that renders at the lowest priority without the background
    /// share (it waits while answers render): one at a time, so upgrades
    /// waiting for the render pool never hold the slots revalidations and
    /// the reclaimer need; and only once no foreground request has been
    /// downloaded or rendered for `quietAfter` (one AVIF at the slow effort
    /// holds a core for 20–300 ms, which a burst of cold answers needs).
    package static let formatUpgrade = BackgroundKind("format_upgrade", maxRunning: 1, waitsForQuiet: true)
    /// A download or render whose last requester left (its deadline passed,
    /// its client went away), finished and stored so the next request is a
    /// hit (``Coalescer``'s adopter).
    package static let orphanedFlight = BackgroundKind("orphaned_flight")

    /// Every kind the pipeline's scheduler runs (the pipeline's, the
    /// store's, the tier's), in the order `/metrics` lists them.
    package static let pipelineKinds: [BackgroundKind] = [
        .revalidation, .placeholder, .warmUp, .tier2Write, .formatUpgrade,
        .touchLogFold, .reclaim, .negativeCleanup, .orphanedFlight,
    ]
}
