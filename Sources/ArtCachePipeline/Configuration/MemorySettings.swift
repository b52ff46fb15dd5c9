import Foundation

/// `[memory]`: the in-process tier of encoded images in front of the disk
/// cache (least recently used first out; both limits strict; 0 turns it off).
public struct MemorySettings: Sendable, Equatable {
    public var maxBytes: Int64
    public var maxEntries: Int

    /// Every value defaults to the documented default of `cache.conf`.
    public init(maxBytes: Int64 = 64_000_000, maxEntries: Int = 10_000) {
        self.maxBytes = maxBytes
        self.maxEntries = maxEntries
    }
}
