import Foundation

extension Sniffer {
    /// A body checked against its declared Content-Type.
    struct Checked: Sendable {
        let sniffed: SniffResult
        /// The declared media type (no parameters), if any.
        let declared: String?
        /// The declared type disagreed with the bytes (and the sniffed one wins).
        let repaired: Bool
    }

    /// A body that is not an image.
    struct Refusal: Error, Sendable {
        let sniffed: SniffedFormat?
        let declared: String?
        var message: String { "\(sniffed?.displayName ?? "unknown") served as \(declared ?? "no content type")" }
    }

    /// The one check every stored or served body goes through: sniff the
    /// bytes, refuse anything that is not an image, and tell whether the
    /// declared type needs repairing.
    static func check(_ data: Data, declaredType: String?) throws(Refusal) -> Checked {
        let sniffed = sniff(data)
        let declared = mediaType(ofContentType: declaredType)
        guard sniffed.format.isImage else { throw Refusal(sniffed: sniffed.format, declared: declared) }
        return Checked(sniffed: sniffed, declared: declared, repaired: isMismatch(declared: declared, sniffed: sniffed))
    }
}
