import ArtCacheCore
import Foundation

/// Animated sources (issue 52 §1): an animated GIF or WebP gives an animated
/// WebP to a WebP output — every frame resized (WebP shrinks on load; GIF
/// has no such decode), frame delays and loop count kept, by libvips
/// (`thumbnail` with `n=-1`, `webpsave`) — while it is within
/// `[thumbnails] max_frames` and `max_animation_pixels` (checked from the
/// header, before any frame is decoded). Past either, the WebP output is
/// its first frame, marked ``RenderedImage/StillReason/frames``. JPEG, PNG
/// and AVIF outputs are the first frame, as before.
extension Renderer {
    /// `specs` of a GIF or WebP source, at least one of them WebP: stills
    /// from one decode of the first frame, animations one by one.
    func renderMaybeAnimated(_ data: Data, format sniffed: SniffedFormat, loaders: Int32, specs: [VariantSpec],
                             encoding: (VariantSpec, VariantSpec.Format) -> EncoderSetting) throws(RenderError) -> [RenderedImage] {
        let image = try openChecked(data, format: sniffed)
        let header = image.header
        guard header.frames > 1 else {
            return try renderStills(data, format: sniffed, loaders: loaders, specs: specs, opened: image, encoding: encoding)
        }
        let animates = settings.renderLimits.animates(header)
        var outputs = [RenderedImage?](repeating: nil, count: specs.count)
        let stills = specs.indices.filter { specs[$0].format != .webp || !animates }
        if !stills.isEmpty {
            let made = try renderStills(data, format: sniffed, loaders: loaders, specs: stills.map { specs[$0] }, opened: image,
                                        encoding: encoding)
            for (index, image) in zip(stills, made) {
                var image = image
                if specs[index].format == .webp { image.still = .frames }
                outputs[index] = image
            }
        }
        for index in specs.indices where outputs[index] == nil {
            outputs[index] = try renderAnimation(data, format: sniffed, header: header, loaders: loaders, spec: specs[index],
                                                 encoding: encoding)
        }
        return outputs.compactMap { $0 }
    }

    /// One animated WebP: every frame into the spec's box (`contain`), or
    /// covering it and cropped at the centre (`cover`; `smart` too: an
    /// attention crop per frame would make the subject jump).
    private func renderAnimation(_ data: Data, format sniffed: SniffedFormat, header: ImageHeader, loaders: Int32,
                                 spec: VariantSpec,
                                 encoding: (VariantSpec, VariantSpec.Format) -> EncoderSetting) throws(RenderError) -> RenderedImage {
        let frame = RenderPlan.upright(width: header.width, height: header.height, orientation: header.orientation)
        let (box, output) = Self.animationBox(frame: (frame.width, frame.height), spec: spec)
        let render = VipsRender(timeout: settings.renderTimeout, format: sniffed)
        let decoded: Result<Void, RenderError> = data.withUnsafeBytes { bytes in
            do throws(RenderError) {
                try render.animation(bytes, loaders: loaders, box: box, output: output)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try decoded.get()
        return try finish(render, spec, encoding)
    }

    /// The box every frame is shrunk into, and the size it is cropped to:
    /// `contain` the spec's box (no crop); otherwise the box the frame covers
    /// the spec's with (never enlarged), cropped to the spec's.
    static func animationBox(frame: (width: Int, height: Int),
                             spec: VariantSpec) -> (box: (width: Int, height: Int), output: (width: Int, height: Int)) {
        guard spec.fit != .contain, frame.width > 0, frame.height > 0 else {
            return ((spec.width, spec.height), (spec.width, spec.height))
        }
        let scale = min(1, max(Double(spec.width) / Double(frame.width), Double(spec.height) / Double(frame.height)))
        let box = (width: max(1, Int((Double(frame.width) * scale).rounded(.up))),
                   height: max(1, Int((Double(frame.height) * scale).rounded(.up))))
        return (box, (min(spec.width, box.width), min(spec.height, box.height)))
    }
}
