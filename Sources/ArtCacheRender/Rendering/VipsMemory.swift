import CVipsShim

/// libvips' tracked memory (its pixel buffers; the operation cache is off),
/// read at `/metrics` scrape time. Two counters behind libvips' own mutex: cheap.
package enum VipsMemory {
    /// Bytes held now.
    package static var tracked: Int { Int(cvips_tracked_memory()) }
    /// The most held at once since the process started.
    package static var highWater: Int { Int(cvips_tracked_memory_highwater()) }
}
