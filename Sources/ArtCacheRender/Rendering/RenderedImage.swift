import ArtCacheCore
import Foundation

/// A rendered variant.
package struct RenderedImage: Sendable {
    package let data: Data
    package let width: Int
    package let height: Int
    package let format: VariantSpec.Format
    package let hasAlpha: Bool

    package init(data: Data, width: Int, height: Int, format: VariantSpec.Format, hasAlpha: Bool) {
        (self.data, self.width, self.height, self.format, self.hasAlpha) = (data, width, height, format, hasAlpha)
    }

    /// Bytes rendered before (by another node: the shared tier), by media type;
    /// nil for a type no render makes.
    package init?(stored data: Data, contentType: String, width: Int, height: Int) {
        let formats: [String: VariantSpec.Format] = ["image/jpeg": .jpeg, "image/webp": .webp, "image/png": .png, "image/avif": .avif]
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
        }
    }
}
