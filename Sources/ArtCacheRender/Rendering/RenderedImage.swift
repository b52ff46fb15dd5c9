import ArtCacheCore
import Foundation

/// A rendered variant.
package struct RenderedImage: Sendable {
    package let data: Data
    package let width: Int
    package let height: Int
    package let format: VariantSpec.Format
    package let hasAlpha: Bool
    /// Frames of an animated output (an animated WebP); 1 for a still.
    package var frames = 1
    /// Why an animated source gave a still WebP: past `max_frames` or
    /// `max_animation_pixels` (`X-ArtCache-Still`); nil otherwise.
    package var still: StillReason?

    /// Why an animation was answered with its first frame.
    package enum StillReason: String, Sendable {
        /// Past `[thumbnails] max_frames` or `max_animation_pixels`.
        case frames
    }

    package init(data: Data, width: Int, height: Int, format: VariantSpec.Format, hasAlpha: Bool) {
        (self.data, self.width, self.height, self.format, self.hasAlpha) = (data, width, height, format, hasAlpha)
    }

    /// Bytes rendered before (by another node: the shared tier), by media type;
    /// nil for a type no render makes.
    package init?(stored data: Data, contentType: String, width: Int, height: Int) {
        let formats: [String: VariantSpec.Format] = ["image/jpeg": .jpeg, "image/webp": .webp, "image/png": .png, "image/avif": .avif,
                                                       "image/jxl": .jxl]
        guard let format = formats[contentType] else { return nil }
        self.init(data: data, width: width, height: height, format: format, hasAlpha: format != .jpeg)
    }

    /// The media type of `data` (its format is never `.auto`).
    package var contentType: String {
        switch format {
        case .auto, .jpeg: "image/jpeg"
        case .webp: "image/webp"
        case .png: "image/png"
        case .avif: "image/avif"
        case .jxl: "image/jxl"
        }
    }
}
