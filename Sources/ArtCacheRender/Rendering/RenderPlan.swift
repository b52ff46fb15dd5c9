import ArtCacheCore
import Foundation

/// What a render does, decided before any libvips call: the fit math (boxes,
/// scales, crops) and the output format. Pure functions of sizes and specs,
/// so they are tested without an image; the C shim only carries them out.
package enum RenderPlan {
    /// How an output's box is filled after the resize.
    package enum Crop: Sendable, Equatable {
        /// The centre (`cover`).
        case centre
        /// The subject libvips' attention finds (`smart`).
        case attention
    }

    /// The scale that takes a `width` x `height` image into `spec`'s box:
    /// inside it for `contain`, filling it for `cover` and `smart`; never
    /// more than 1 (thumbnails are never enlarged).
    package static func scale(width: Int, height: Int, into spec: VariantSpec) -> Double {
        let sx = Double(spec.width) / Double(max(1, width))
        let sy = Double(spec.height) / Double(max(1, height))
        return min(1, spec.fit == .contain ? min(sx, sy) : max(sx, sy))
    }

    /// The box one decode (shrink on load) goes into so that every output
    /// can be made from it: the upright source scaled by the largest scale
    /// any output needs, rounded up.
    package static func decodeBox(width: Int, height: Int, specs: [VariantSpec]) -> (width: Int, height: Int) {
        let scale = specs.map { Self.scale(width: width, height: height, into: $0) }.max() ?? 1
        return (max(1, Int((Double(width) * scale).rounded(.up))), max(1, Int((Double(height) * scale).rounded(.up))))
    }

    /// The crop that makes a resized `width` x `height` image exactly the
    /// box (`cover`, `smart`; sides never larger than the image), or nil
    /// when none is needed.
    package static func crop(width: Int, height: Int, spec: VariantSpec) -> (width: Int, height: Int, crop: Crop)? {
        guard spec.fit != .contain else { return nil }
        let (w, h) = (min(width, spec.width), min(height, spec.height))
        guard w != width || h != height else { return nil }
        return (w, h, spec.fit == .smart ? .attention : .centre)
    }

    /// The format written: `auto` is PNG for an image with alpha, else JPEG.
    package static func outputFormat(_ requested: VariantSpec.Format, hasAlpha: Bool) -> VariantSpec.Format {
        requested == .auto ? (hasAlpha ? .png : .jpeg) : requested
    }

    /// Alpha is flattened onto the background when the output cannot keep it (JPEG).
    package static func flattens(_ format: VariantSpec.Format, hasAlpha: Bool) -> Bool {
        hasAlpha && format == .jpeg
    }

    /// Upright width and height from a header (EXIF orientations 5...8 swap the sides).
    package static func upright(width: Int, height: Int, orientation: Int) -> (width: Int, height: Int) {
        (5...8).contains(orientation) ? (height, width) : (width, height)
    }
}
