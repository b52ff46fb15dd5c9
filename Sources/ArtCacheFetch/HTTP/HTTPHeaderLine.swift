import ArtCacheCore

/// A header line of a response head, as libcurl hands it over (`Name: value\r\n`).
package enum HTTPHeaderLine {
    /// The lowercased name and the trimmed value, split at the first colon;
    /// nil for a line without one. The colon is found as a byte: as a
    /// Character, ":" followed by a combining mark is not ":", and the line
    /// (a `Location` included) would be skipped instead of read.
    ///
    /// Split as bytes and trimmed by `trimmingWhitespace(newlines:)`
    /// (Foundation's answer, by bytes where the ends are ASCII): no string
    /// bridging for every header line of every transfer.
    package static func field(_ line: UnsafeBufferPointer<UInt8>) -> (name: String, value: String)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = String(decoding: line[..<colon], as: UTF8.self).trimmingWhitespace().lowercased()
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingWhitespace(newlines: true)
        return (name, value)
    }

    /// `line` as a String (tests, and callers holding text).
    package static func field(_ line: String) -> (name: String, value: String)? {
        var line = line
        return line.withUTF8 { field($0) }
    }
}
