import Foundation

/// A header line of a response head, as libcurl hands it over (`Name: value\r\n`).
package enum HTTPHeaderLine {
    /// The lowercased name and the trimmed value, split at the first colon;
    /// nil for a line without one. The colon is found as a byte: as a
    /// Character, ":" followed by a combining mark is not ":", and the line
    /// (a `Location` included) would be skipped instead of read.
    package static func field(_ line: String) -> (name: String, value: String)? {
        let bytes = line.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = Substring(bytes[..<colon]).trimmingCharacters(in: .whitespaces).lowercased()
        let value = Substring(bytes[bytes.index(after: colon)...]).trimmingCharacters(in: .whitespacesAndNewlines)
        return (name, value)
    }
}
