import ArtCacheCore
import ArtCacheFetch
import Foundation
import NIOCore

/// The IMF-fixdate of the current second, formatted at most once per second
/// (shared by every connection: ``ThumbnailService/dateHeader``).
final class DateHeader: Sendable {
    private let cached = Locked<(second: Int, text: String, line: ByteBuffer)>((-1, "", ByteBuffer()))

    func text() -> String { current().text }

    /// `date: …` and the blank line that ends a response head, as bytes.
    func line() -> ByteBuffer { current().line }

    private func current() -> (second: Int, text: String, line: ByteBuffer) {
        let second = Int(Date().timeIntervalSince1970)
        if let known = cached.withLock({ $0.second == second ? $0 : nil }) { return known }
        let text = HTTPDate.string(Double(second))
        let fresh = (second, text, ByteBuffer(string: "Date: \(text)\r\n\r\n"))
        cached.withLock { $0 = fresh }
        return fresh
    }
}
