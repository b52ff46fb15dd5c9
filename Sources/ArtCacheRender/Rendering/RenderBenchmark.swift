import ArtCacheCore
import Foundation

/// What `Benchmarks/` (a package of its own, which cannot see this package's
/// `package` declarations) measures of rendering and sniffing, and nothing
/// more. Not part of the supported API; nothing in this package uses it.
@_spi(Benchmarks) public struct RenderBenchmark: Sendable {
    /// One rendition: its pixels' size, format and encoded bytes.
    public struct Image: Sendable {
        public let width: Int
        public let height: Int
        public let format: VariantSpec.Format
        public let data: Data
    }

    let renderer: Renderer

    public init(settings: ThumbnailSettings) { renderer = Renderer(settings: settings) }

    /// Renders one variant of `data`, as the pipeline does.
    public func render(_ data: Data, spec: VariantSpec) async throws -> Image {
        let image = try await renderer.render(data, spec: spec)
        return Image(width: image.width, height: image.height, format: image.format, data: image.data)
    }

    /// Renders every spec of `data` from one decode; the number of renditions.
    public func render(_ data: Data, specs: [VariantSpec]) async throws -> Int {
        try await renderer.render(data, specs: specs).count
    }

    /// Computes `data`'s placeholder and intrinsics on the calling thread; false when it cannot.
    public func computesIntrinsics(_ data: Data) -> Bool { renderer.computesIntrinsics(data) }

    /// The media type the sniffer finds in `data`.
    public static func sniff(_ data: Data) -> String { Sniffer.sniff(data).mimeType }
}
