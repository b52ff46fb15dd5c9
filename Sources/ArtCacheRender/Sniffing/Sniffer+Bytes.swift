import Foundation

/// A read-only, bounds-checked view of bytes for the sniffer.
///
/// Only valid inside the `withUnsafeBytes` call that produced it.
struct SniffBytes {
    let base: UnsafeRawBufferPointer

    init(_ base: UnsafeRawBufferPointer) { self.base = base }

    var count: Int { base.count }

    subscript(index: Int) -> UInt8 { base[index] }

    /// The first `length` bytes (or all of them).
    func prefix(_ length: Int) -> SniffBytes {
        SniffBytes(UnsafeRawBufferPointer(rebasing: base[0..<Swift.min(length, count)]))
    }

    func u8(_ index: Int) -> Int? {
        index >= 0 && index < count ? Int(base[index]) : nil
    }

    func be16(_ index: Int) -> Int? {
        guard index >= 0, index + 2 <= count else { return nil }
        return Int(base[index]) << 8 | Int(base[index + 1])
    }

    func le16(_ index: Int) -> Int? {
        guard index >= 0, index + 2 <= count else { return nil }
        return Int(base[index + 1]) << 8 | Int(base[index])
    }

    func be32(_ index: Int) -> Int? {
        guard index >= 0, index + 4 <= count else { return nil }
        return Int(base[index]) << 24 | Int(base[index + 1]) << 16 | Int(base[index + 2]) << 8 | Int(base[index + 3])
    }

    func le32(_ index: Int) -> Int? {
        guard index >= 0, index + 4 <= count else { return nil }
        return Int(base[index + 3]) << 24 | Int(base[index + 2]) << 16 | Int(base[index + 1]) << 8 | Int(base[index])
    }

    /// True when `bytes` occur at `index`.
    func has(_ bytes: [UInt8], at index: Int = 0) -> Bool {
        guard index >= 0, index + bytes.count <= count else { return false }
        for (offset, byte) in bytes.enumerated() where base[index + offset] != byte {
            return false
        }
        return true
    }

    /// True when the ASCII string `text` occurs at `index` (case-sensitive).
    func has(ascii text: String, at index: Int = 0) -> Bool {
        has(Array(text.utf8), at: index)
    }

    /// The four bytes at `index` as an ASCII string (a box or chunk type).
    func fourCC(_ index: Int) -> String? {
        guard index >= 0, index + 4 <= count else { return nil }
        return String(decoding: base[index..<index + 4], as: UTF8.self)
    }
}
