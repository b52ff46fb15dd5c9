import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

extension Requests {
    /// A placeholder for a failed request: the configured image
    /// (`[thumbnails] placeholder`) or a generated neutral grey, at the
    /// requested size (the first configured size for originals), with the
    /// error attached. Kept in memory by size and format, never under the
    /// URL's key, never on disk.
    func placeholder(for request: ImageRequest, error: ArtCacheError) async throws(ArtCacheError) -> ImageResponse {
        let settings = configuration.thumbnails
        let fallback = settings.sizes.first.map { ImageRequest.Size(width: $0.width, height: $0.height) } ?? ImageRequest.Size(100)
        let asked = request.size ?? fallback
        let width = min(max(1, asked.width), settings.maxOutput)
        let height = min(max(1, asked.height), settings.maxOutput)
        var format = request.format ?? settings.format
        if format == .auto { format = .jpeg }
        let key = "\(width)x\(height),\(format.rawValue)"
        if let made = placeholders[key] {
            return made.with(error: error)
        }
        let image: RenderedImage
        do {
            image = try await makePlaceholder(width: width, height: height, format: format)
        } catch {
            throw ArtCacheError(any: error, context: "placeholder \(key)")
        }
        let response = ImageResponse(data: image.data, contentType: Sniffer.sniff(image.data).mimeType,
                                     width: image.width, height: image.height, source: .placeholder, cacheKey: nil)
        placeholders.store(response, for: key)
        return response.with(error: error)
    }

    private func makePlaceholder(width: Int, height: Int, format: VariantSpec.Format) async throws -> RenderedImage {
        let settings = configuration.thumbnails
        let urgent = PriorityHandle(.veryHigh)
        if !settings.placeholder.isEmpty {
            do {
                let path = settings.placeholder
                let file = try await Blocking.run { try Data(contentsOf: URL(fileURLWithPath: path)) }
                let spec = VariantSpec(width: width, height: height, fit: .cover, format: format, quality: settings.quality,
                                       background: settings.background)
                return try await renderer.render(file, spec: spec, priority: urgent)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.error("placeholder file unusable, using a generated one",
                             metadata: ["file": "\(settings.placeholder)", "error": "\(error)"])
            }
        }
        let renderer = self.renderer
        return try await renderer.onRenderThread(priority: urgent) {
            try renderer.solidImage(width: width, height: height, rgb: [204, 204, 204], format: format, quality: settings.quality)
        }
    }
}
