import Foundation

/// An IPv4 or IPv6 address as connected to (16 bytes; IPv4 as itself, not mapped).
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    case v6([UInt8])

    /// Parses dotted-quad IPv4 or textual IPv6 (inet_pton: no short or octal forms).
    public init?(_ text: String) {
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
    init?(sockaddr pointer: UnsafeRawPointer, length: Int) {
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

    public var description: String {
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
    var embeddedIPv4: UInt32? {
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
    public let address: IPAddress
    public let prefix: Int

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

    public func contains(_ other: IPAddress) -> Bool {
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

/// What kind of address an origin connection goes to. Everything but
/// `.public` is refused unless `[download] allowed_networks` opts it in.
public enum AddressClass: String, Sendable, CaseIterable {
    case `public`
    case unspecified, loopback, `private`, sharedCGNAT = "cgnat", linkLocal = "link_local"
    case multicast, broadcast, reserved, uniqueLocal = "unique_local", siteLocal = "site_local"
    case documentation, benchmarking

    /// Classifies an address; IPv6 forms carrying an IPv4 address (mapped,
    /// compatible, NAT64, 6to4) are judged by that IPv4 address.
    public static func of(_ address: IPAddress) -> AddressClass {
        if let v4 = address.embeddedIPv4 { return of(.v4(v4)) }
        let table = address.isV4 ? v4Table : v6Table
        return table.first { $0.0.contains(address) }?.1 ?? .public
    }

    private static let v4Table: [(IPNetwork, AddressClass)] = table([
        ("0.0.0.0/8", .unspecified), ("127.0.0.0/8", .loopback), ("10.0.0.0/8", .private),
        ("172.16.0.0/12", .private), ("192.168.0.0/16", .private), ("100.64.0.0/10", .sharedCGNAT),
        ("169.254.0.0/16", .linkLocal), ("224.0.0.0/4", .multicast), ("255.255.255.255/32", .broadcast),
        ("240.0.0.0/4", .reserved), ("192.0.0.0/24", .reserved), ("192.0.2.0/24", .documentation),
        ("198.51.100.0/24", .documentation), ("203.0.113.0/24", .documentation), ("198.18.0.0/15", .benchmarking),
    ])

    private static let v6Table: [(IPNetwork, AddressClass)] = table([
        ("::/128", .unspecified), ("::1/128", .loopback), ("fe80::/10", .linkLocal), ("fec0::/10", .siteLocal),
        ("fc00::/7", .uniqueLocal), ("ff00::/8", .multicast), ("2001:db8::/32", .documentation),
        ("100::/64", .reserved), ("2001::/23", .reserved), ("::/8", .reserved),
    ])

    private static func table(_ rows: [(String, AddressClass)]) -> [(IPNetwork, AddressClass)] {
        rows.map { (IPNetwork($0.0)!, $0.1) }  // literals above: a typo fails every test at once
    }
}

extension IPAddress {
    var isV4: Bool { if case .v4 = self { true } else { false } }
}

/// Where origin connections may go: public addresses, plus the networks a
/// configuration opts back in. Checked by the downloader on the address
/// libcurl actually connects to, for every connection and redirect hop.
public struct AddressPolicy: Sendable, Equatable {
    public var allowedNetworks: [IPNetwork]

    public init(allowedNetworks: [IPNetwork] = []) { self.allowedNetworks = allowedNetworks }

    public func allows(_ address: IPAddress) -> Bool {
        if AddressClass.of(address) == .public { return true }
        let v4 = address.embeddedIPv4.map(IPAddress.v4)
        return allowedNetworks.contains { $0.contains(address) || (v4.map($0.contains) ?? false) }
    }
}
