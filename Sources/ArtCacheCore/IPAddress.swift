import Foundation

/// An IPv4 or IPv6 address as connected to (16 bytes; IPv4 as itself, not mapped).
package enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    case v6([UInt8])

    /// Parses dotted-quad IPv4 or textual IPv6 (inet_pton: no short or octal forms).
    package init?(_ text: String) {
        // inet_pton reads a C string: a NUL would end the text early.
        guard !text.utf8.contains(0) else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        self = .v6(withUnsafeBytes(of: &v6) { Array($0) })
    }

    /// From a `sockaddr_in` / `sockaddr_in6` as libcurl hands it over.
    package init?(sockaddr pointer: UnsafeRawPointer, length: Int) {
        let family = pointer.load(fromByteOffset: 0, as: sa_family_t.self)
        if family == sa_family_t(AF_INET), length >= MemoryLayout<sockaddr_in>.size {
            let address = pointer.load(as: sockaddr_in.self)
            self = .v4(UInt32(bigEndian: address.sin_addr.s_addr))
        } else if family == sa_family_t(AF_INET6), length >= MemoryLayout<sockaddr_in6>.size {
            var address = pointer.load(as: sockaddr_in6.self).sin6_addr
            self = .v6(withUnsafeBytes(of: &address) { Array($0) })
        } else {
            return nil
        }
    }

    package var description: String {
        switch self {
        case .v4(let value): return "\(value >> 24).\(value >> 16 & 255).\(value >> 8 & 255).\(value & 255)"
        case .v6(var bytes):
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            _ = inet_ntop(AF_INET6, &bytes, &text, socklen_t(text.count))
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// The IPv4 address an IPv6 one carries (mapped `::ffff:a.b.c.d`,
    /// compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002:AABB:CCDD::/48`).
    /// Not for local-use NAT64 (`64:ff9b:1::/48`): where the IPv4 address
    /// sits there depends on the prefix length each network picks.
    package var embeddedIPv4: UInt32? {
        guard case .v6(let b) = self else { return nil }
        func v4(_ at: Int) -> UInt32 { UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3]) }
        if b[0..<10].allSatisfy({ $0 == 0 }), b[10] == 0xFF, b[11] == 0xFF { return v4(12) }
        if b[0..<12].allSatisfy({ $0 == 0 }), v4(12) > 1 { return v4(12) }
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B, b[4..<12].allSatisfy({ $0 == 0 }) { return v4(12) }
        if b[0] == 0x20, b[1] == 0x02 { return v4(2) }
        return nil
    }
}

/// An address range in CIDR notation (`10.0.0.0/8`, `fc00::/7`).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    package let address: IPAddress
    package let prefix: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(String(parts[0])) else { return nil }
        let maximum = if case .v4 = address { 32 } else { 128 }
        let prefix = parts.count == 2 ? Int(parts[1]) : maximum
        guard let prefix, (0...maximum).contains(prefix) else { return nil }
        self.address = address
        self.prefix = prefix
    }

    public var description: String { "\(address)/\(prefix)" }

    package func contains(_ other: IPAddress) -> Bool {
        switch (address, other) {
        case (.v4(let a), .v4(let b)):
            let mask: UInt32 = prefix == 0 ? 0 : ~UInt32(0) << (32 - prefix)
            return a & mask == b & mask
        case (.v6(let a), .v6(let b)):
            var bits = prefix
            for index in 0..<16 where bits > 0 {
                let take = min(8, bits)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
                if a[index] & mask != b[index] & mask { return false }
                bits -= take
            }
            return true
        default:
            return false
        }
    }
}

extension IPAddress {
    package var isV4: Bool { if case .v4 = self { true } else { false } }
}
