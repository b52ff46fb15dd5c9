import Foundation
import ArtCacheCore

/// What a page needs of an image before it arrives: its upright size and
/// its placeholder (computed once per original, kept in the index).
package struct Intrinsics: Sendable, Hashable {
    /// Upright pixels (EXIF orientation applied); one frame of an animation.
    package let width: Int
    package let height: Int
    package let placeholder: Placeholder
    /// Frames of an animation (GIF, WebP); 1 otherwise.
    package var frames = 1

    package init(width: Int, height: Int, placeholder: Placeholder, frames: Int = 1) {
        (self.width, self.height, self.placeholder, self.frames) = (width, height, placeholder, frames)
    }
}

extension Renderer {
    /// The longer side of the decode a placeholder is computed from.
    static let placeholderSide = 32

    /// The placeholder of an encoded image: decoded (shrink-on-load, upright)
    /// into 32×32 at most with its aspect ratio kept, as 8-bit sRGB RGBA; its
    /// ThumbHash and dominant colour. Under the same limits and deadline as
    /// a render. Call it on a thread you own (``placeholder(of:priority:)``
    /// from a task).
    /// A JPEG the fast path takes is decoded by libjpeg-turbo at 1/8 scale
    /// (``JPEGFastPath/placeholderPixels(_:maxSourcePixels:deadline:)``).
    package func placeholderBlocking(_ data: Data) throws(RenderError) -> Placeholder {
        try intrinsicsBlocking(data).placeholder
    }

    /// The upright size and placeholder of an encoded image
    /// (``placeholderBlocking(_:)``), from one decode.
    package func intrinsicsBlocking(_ data: Data) throws(RenderError) -> Intrinsics {
        let sniffed = Sniffer.sniff(data).format
        if settings.fastJPEG, sniffed == .jpeg {
            _ = try allowedLoaders(for: sniffed)
            let deadline = ContinuousClock.now + .seconds(settings.renderTimeout)
            if let small = try JPEGFastPath.placeholderPixels(data, maxSourcePixels: settings.renderLimits.maxSourcePixels,
                                                              deadline: deadline) {
                return try small.intrinsics()
            }
        }
        try Self.start()
        let header = try self.header(of: data)
        let rotated = (5...8).contains(header.orientation)
        let image = try openChecked(data, format: sniffed)
        let render = VipsRender(timeout: settings.renderTimeout, format: sniffed)
        try render.thumbnail(image, width: Self.placeholderSide, height: Self.placeholderSide, centreCrop: false)
        try render.toSRGB()
        let size = render.info
        var intrinsics = try PlaceholderPixels(width: size.width, height: size.height, rgba: render.rgba(),
                                               sourceWidth: rotated ? header.height : header.width,
                                               sourceHeight: rotated ? header.width : header.height).intrinsics()
        intrinsics.frames = max(1, header.frames)
        return intrinsics
    }

    /// ``placeholderBlocking(_:)`` on a render thread, in `priority` order with renders.
    package func placeholder(of data: Data, priority: PriorityHandle) async throws -> Placeholder {
        try await onRenderThread(placeholderPriority: priority) { try self.placeholderBlocking(data) }
    }

    /// ``intrinsicsBlocking(_:)`` for the benchmark tools: whether `data` gave them.
    package func computesIntrinsics(_ data: Data) -> Bool { (try? intrinsicsBlocking(data)) != nil }

    /// ``intrinsicsBlocking(_:)`` on a render thread, in `priority` order with renders.
    package func intrinsics(of data: Data, priority: PriorityHandle) async throws -> Intrinsics {
        try await onRenderThread(placeholderPriority: priority) { try self.intrinsicsBlocking(data) }
    }

    /// Renders `specs` and computes the image's intrinsics in one job on a
    /// render thread: from the render's own decode on the fast path (~50 µs
    /// more), else by a placeholder decode of their own after the render.
    /// A failure of the intrinsics alone gives nil, never the render's error.
    package func renderWithIntrinsics(_ data: Data, specs: [VariantSpec],
                                      priority: PriorityHandle) async throws -> (images: [RenderedImage], intrinsics: Intrinsics?) {
        guard !specs.isEmpty else { return ([], nil) }
        let known = try admit(data, specs: specs)
        return try await onRenderThread(priority: priority) {
            var pixels: PlaceholderPixels?
            let images = try self.renderBlocking(data, format: known, specs: specs, placeholder: { pixels = $0 })
            let intrinsics = if let pixels { try? pixels.intrinsics() } else { try? self.intrinsicsBlocking(data) }
            if intrinsics != nil { self.countPlaceholder() }
            return (images, intrinsics)
        }
    }
}
