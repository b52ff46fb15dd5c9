import ArtCacheCore

extension BackgroundKind {
    /// An original (and its record) written to the shared second tier
    /// behind its answer.
    package static let tier2Write = BackgroundKind("tier2_write")
}
