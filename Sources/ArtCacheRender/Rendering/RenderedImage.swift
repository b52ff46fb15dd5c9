import ArtCacheCore
import Foundation

/// A rendered variant.
package struct RenderedImage: Sendable {
    package let data: Data
    package let width: Int
    package let height: Int
    package let format: VariantSpec.Format
    package let hasAlpha: Bool

    /// The media type of `data` (its format is never `.auto`).
    package var contentType: String {
        switch format {
        case .auto, .jpeg: "image/jpeg"
        case .webp: "image/webp"
        case .png: "image/png"
        case .avif: "image/avif"
        }
    }
}
