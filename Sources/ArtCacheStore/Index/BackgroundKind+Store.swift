import ArtCacheCore

/// The store's work behind answers (``BackgroundScheduler`` runs it; the
/// store declares it).
extension BackgroundKind {
    /// Folding the access-time log into the index.
    package static let touchLogFold = BackgroundKind("touch_log_fold")
    /// Deleting the files of evicted rows.
    package static let reclaim = BackgroundKind("reclaim")
    /// Dropping negative answers past their time and over their cap.
    package static let negativeCleanup = BackgroundKind("negative_cleanup")

    /// Every kind the store submits.
    package static let storeKinds: [BackgroundKind] = [.touchLogFold, .reclaim, .negativeCleanup]
}
