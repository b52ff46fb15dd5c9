/// A header line of a response head, as libcurl hands it over (`Name: value\r\n`).
package enum HTTPHeaderLine {
    /// The lowercased name and the trimmed value, split at the first colon;
    /// nil for a line without one. The colon is found as a byte: as a
    /// Character, ":" followed by a combining mark is not ":", and the line
    /// (a `Location` included) would be skipped instead of read.
    ///
    /// Read as bytes, never through Foundation's string bridging (it ran for
    /// every header line of every transfer): the name loses its optional
    /// whitespace and is lowercased in ASCII (a field name is a token), the
    /// value loses its optional whitespace (SP, HTAB) and the line end.
    package static func field(_ line: UnsafeBufferPointer<UInt8>) -> (name: String, value: String)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = trimmed(line[..<colon], lineEnd: false)
        let value = trimmed(line[(colon + 1)...], lineEnd: true)
        let lowered = String(unsafeUninitializedCapacity: name.count) { buffer in
            for (offset, byte) in name.enumerated() {
                buffer[offset] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
            }
            return name.count
        }
        return (lowered, String(decoding: value, as: UTF8.self))
    }

    /// `line` as a String (tests, and callers holding text).
    package static func field(_ line: String) -> (name: String, value: String)? {
        var line = line
        return line.withUTF8 { field($0) }
    }

    /// `bytes` without leading and trailing SP and HTAB (and CR, LF with `lineEnd`).
    private static func trimmed(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, lineEnd: Bool) -> Slice<UnsafeBufferPointer<UInt8>> {
        func blank(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || (lineEnd && (byte == 0x0D || byte == 0x0A))
        }
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) }) else {
            return bytes[bytes.endIndex...]
        }
        return bytes[first...last]
    }
}
