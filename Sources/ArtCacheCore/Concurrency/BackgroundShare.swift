/// Background work's reserved share of a pool's hand-offs (the render
/// threads' jobs, ``WorkerThreads``; the downloader's admissions): while a
/// background job waits, at most ``foregroundInARow`` foreground ones are
/// handed over in a row before it, whatever their priority, so a steady
/// stream of requests cannot starve the work behind answers (placeholders,
/// revalidations, warm-ups).
///
/// A pool asks ``isBackgroundsTurn(_:)`` before it picks by priority, and
/// records every hand-off (``handedOver(background:backgroundWaited:)``).
package struct BackgroundShare: Sendable, Equatable {
    /// Foreground hand-offs in a row before a waiting background job goes
    /// next: 3 gives background work a quarter of the hand-offs while both wait.
    package static let foregroundInARow = 3

    /// Foreground hand-offs in a row while a background job waited.
    private var streak = 0

    package init() {}

    /// Whether the oldest waiting background job goes next
    /// (`backgroundWaits`: one waits and could be handed over now).
    package func isBackgroundsTurn(_ backgroundWaits: Bool) -> Bool {
        backgroundWaits && streak >= Self.foregroundInARow
    }

    /// Records a hand-off: a background job's starts the count over; a
    /// foreground one counts when a background job waited meanwhile.
    package mutating func handedOver(background: Bool, backgroundWaited: Bool) {
        if background {
            streak = 0
        } else if backgroundWaited {
            streak += 1
        }
    }
}
