import Foundation

extension StringProtocol {
    /// `self` without leading and trailing whitespace (with `newlines`, line
    /// ends too), as Foundation's `trimmingCharacters(in:)` with
    /// `.whitespaces` / `.whitespacesAndNewlines` gives it — read as bytes
    /// where the ends are ASCII (header values, URLs, media types: every
    /// transfer read several, and bridging each to NSString cost more than
    /// the rest of the parse), through Foundation only where an end is not.
    package func trimmingWhitespace(newlines: Bool = false) -> String {
        let text = Substring(self)
        let utf8 = text.utf8
        func blank(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || (newlines && (0x0A...0x0D).contains(byte))
        }
        guard let first = utf8.firstIndex(where: { !blank($0) }) else {
            // Only ASCII blanks, or nothing: empty either way.
            return ""
        }
        let last = utf8.lastIndex(where: { !blank($0) })!
        guard utf8[first] < 0x80, utf8[last] < 0x80 else {
            return text.trimmingCharacters(in: newlines ? .whitespacesAndNewlines : .whitespaces)
        }
        return String(Substring(utf8[first...last]))
    }
}
