import Foundation

extension Sniffer {
    /// A body checked against its declared Content-Type.
    package struct Checked: Sendable {
        package let sniffed: SniffResult
        /// The declared media type (no parameters), if any.
        package let declared: String?
        /// The declared type disagreed with the bytes (and the sniffed one wins).
        package let repaired: Bool
    }

    /// A body that is not an image.
    package struct Refusal: Error, Sendable {
        package let sniffed: SniffedFormat?
        package let declared: String?
        package var message: String { "\(sniffed?.displayName ?? "unknown") served as \(declared ?? "no content type")" }
        /// An image in a format not taken (PSD, JPEG 2000, TGA, QOI): `unsupported`.
        package var isUnsupportedImage: Bool { sniffed?.isUnsupportedImage ?? false }
    }

    /// The one check every stored or served body goes through: sniff the
    /// bytes, refuse anything that is not an image, and tell whether the
    /// declared type needs repairing.
    package static func check(_ data: Data, declaredType: String?) throws(Refusal) -> Checked {
        let sniffed = sniff(data)
        let declared = mediaType(ofContentType: declaredType)
        guard sniffed.format.isImage else { throw Refusal(sniffed: sniffed.format, declared: declared) }
        return Checked(sniffed: sniffed, declared: declared, repaired: isMismatch(declared: declared, sniffed: sniffed))
    }
}
