import Foundation

/// Why libwebp or libheif could not encode pixels: the codec and its own
/// message (copied from the call's result at once, never read from a
/// buffer shared between threads). The fast path reports it as
/// `RenderError.encode`.
package struct EncoderError: Error, Sendable, Equatable, CustomStringConvertible {
    package let codec: String
    package let message: String

    package init(_ codec: String, _ message: String) {
        self.codec = codec
        self.message = message
    }

    package var description: String { "\(codec): \(message)" }
}
