import Foundation

extension ServiceSettings {
    /// The `Accept` headers a warm-up through the front sends, one per class
    /// the format policy answers apart (README "What browsers get"): AVIF
    /// and WebP (Chrome, Firefox, Safari 16+), WebP only (older Safari),
    /// neither. The scale-out front sends the nodes the same three.
    package static let warmUpAccepts = ["image/avif,image/webp,*/*", "image/webp,*/*", "*/*"]
}
