import ArtCacheCore
import Foundation

/// Why a render failed.
package struct RenderError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Code: String, Sendable, Codable {
        /// No loader for these bytes, or a loader we do not allow (PDF, JPEG XL, SVG when off...).
        case unsupported
        /// Over the pixel, frame or output limits (decided from the header).
        case tooLarge = "too_large"
        /// Corrupt or truncated image data.
        case decode
        /// The output format could not be written.
        case encode
        /// The render took longer than `[thumbnails] render_timeout` and was
        /// stopped (libvips' kill flag); its worker is free again.
        case timedOut = "render_timeout"
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
    /// Failure key in summaries: `render_unsupported`, `render_too_large`, ...
    package var reason: String { Self.reasonPrefix + code.rawValue }
    /// What every ``reason`` starts with.
    package static let reasonPrefix = "render_"
}

extension ArtCacheError {
    /// A render failure in the public error's terms (kept as `underlying`).
    package init(_ error: RenderError) {
        let code: Code = switch error.code {
        case .unsupported, .encode: .unsupported
        case .tooLarge, .timedOut: .tooLarge
        case .decode: .decode
        }
        self.init(code, error.message, underlying: error)
    }
}
