import Foundation
@_spi(Benchmarks) import ArtCacheCore

extension Renderer {
    /// The longer side of the decode a placeholder is computed from.
    static let placeholderSide = 32

    /// The placeholder of an encoded image: decoded (shrink-on-load, upright)
    /// into 32×32 at most with its aspect ratio kept, as 8-bit sRGB RGBA; its
    /// ThumbHash and dominant colour. Under the same limits and deadline as
    /// a render. Call it on a thread you own (``placeholder(of:priority:)``
    /// from a task).
    package func placeholderBlocking(_ data: Data) throws(RenderError) -> Placeholder {
        let sniffed = Sniffer.sniff(data).format
        try Self.start()
        let image = try openChecked(data, format: sniffed)
        let render = VipsRender(timeout: settings.renderTimeout, format: sniffed)
        try render.thumbnail(image, width: Self.placeholderSide, height: Self.placeholderSide, centreCrop: false)
        try render.toSRGB()
        let size = render.info
        let rgba = try render.rgba()
        do {
            return try Placeholder(width: size.width, height: size.height, rgba: rgba)
        } catch {
            throw RenderError(.decode, "no placeholder for a \(size.width)x\(size.height) decode: \(error)")
        }
    }

    /// ``placeholderBlocking(_:)`` on a render thread, in `priority` order with renders.
    package func placeholder(of data: Data, priority: PriorityHandle) async throws -> Placeholder {
        try await onRenderThread(priority: priority) { try self.placeholderBlocking(data) }
    }
}
