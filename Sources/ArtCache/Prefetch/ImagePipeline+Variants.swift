import Foundation

/// How a variant was obtained.
public struct VariantOutcome: Sendable {
    public enum Source: String, Sendable, Codable {
        /// Already in the cache.
        case cached
        /// Rendered now (and stored, unless the original may not be stored).
        case rendered
    }

    public let source: Source
    /// The variant's index row (nil when its original is `no-store`).
    public let entry: CacheEntry?
    public let data: Data
    public let width: Int
    public let height: Int
}

extension ImagePipeline {
    /// The variant `spec` of `url`: from the cache, else rendered from the
    /// original (downloaded first when missing, coalesced). Two concurrent
    /// requests for one variant render it once.
    public func variant(_ url: String, spec: VariantSpec) async throws -> VariantOutcome {
        guard let renderer else { throw RenderError(.unsupported, "this pipeline has no renderer") }
        let normalized: NormalizedURL
        do {
            normalized = try NormalizedURL(url)
        } catch {
            throw DownloadError(.invalidURL, error.message)
        }
        let canonical = spec.canonical
        let key = CacheKey(parent: normalized.key, spec: canonical)
        return try await variants.run(key: key.hex) { [self] in
            if let hit = try await store.lookup(key: key) {
                return VariantOutcome(source: .cached, entry: hit.entry, data: hit.data,
                                      width: hit.entry.width ?? 0, height: hit.entry.height ?? 0)
            }
            let original = try await self.original(normalized.string)
            let rendered = try await renderer.render(original.data, spec: spec)
            guard let parent = original.entry else {
                return VariantOutcome(source: .rendered, entry: nil, data: rendered.data, width: rendered.width, height: rendered.height)
            }
            do {
                let entry = try await store.putVariant(parent: parent.cacheKey, spec: canonical, data: rendered.data,
                                                       width: rendered.width, height: rendered.height)
                return VariantOutcome(source: .rendered, entry: entry, data: rendered.data, width: rendered.width, height: rendered.height)
            } catch let error as StoreError where error.code == .missingParent {
                // The original was evicted meanwhile: hand out the render anyway.
                return VariantOutcome(source: .rendered, entry: nil, data: rendered.data, width: rendered.width, height: rendered.height)
            }
        }
    }
}
