import Foundation

/// `[memory]`: the in-process tier of encoded images in front of the disk
/// cache (least recently used first out; both limits strict; 0 turns it off).
public struct MemorySettings: Sendable, Equatable {
    public var maxBytes: Int64
    public var maxEntries: Int
    /// Entries of each of the pipeline's memos of facts (resolved requests,
    /// animated sources; emptied when full). Each is a cache of what the
    /// index or the request says: a tiny one only costs lookups (tests churn them).
    package var memoEntries = 4096

    /// Every value defaults to the documented default of `cache.conf`.
    public init(maxBytes: Int64 = 64_000_000, maxEntries: Int = 10_000) {
        self.maxBytes = maxBytes
        self.maxEntries = maxEntries
    }
}
