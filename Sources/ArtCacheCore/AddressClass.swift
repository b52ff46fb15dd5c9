import Foundation

/// What kind of address an origin connection goes to. Everything but
/// `.public` is refused unless `[download] allowed_networks` opts it in.
package enum AddressClass: String, Sendable, CaseIterable {
    case `public`
    case unspecified, loopback, `private`, sharedCGNAT = "cgnat", linkLocal = "link_local"
    case multicast, broadcast, reserved, uniqueLocal = "unique_local", siteLocal = "site_local"
    case documentation, benchmarking
    /// `64:ff9b:1::/48`, NAT64 for local use (RFC 8215), as a whole.
    case localNAT64 = "local_nat64"

    /// Classifies an address; IPv6 forms carrying an IPv4 address (mapped,
    /// compatible, well-known NAT64 `64:ff9b::/96`, 6to4) are judged by that
    /// IPv4 address. The local-use NAT64 prefix `64:ff9b:1::/48` is not: each
    /// network picks its own prefix inside it, /48 to /96, and with it where
    /// the IPv4 address sits (RFC 6052 §2.2), so it cannot be read from
    /// outside; and what such a translator reaches is the operator's choice
    /// (internal IPv4 included). Non-public as a whole; `allowed_networks`
    /// can opt it (or a part of it) back in.
    package static func of(_ address: IPAddress) -> AddressClass {
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
        ("::/128", .unspecified), ("::1/128", .loopback), ("64:ff9b:1::/48", .localNAT64),
        ("fe80::/10", .linkLocal), ("fec0::/10", .siteLocal),
        ("fc00::/7", .uniqueLocal), ("ff00::/8", .multicast), ("2001:db8::/32", .documentation),
        ("100::/64", .reserved), ("2001::/23", .reserved), ("::/8", .reserved),
    ])

    private static func table(_ rows: [(String, AddressClass)]) -> [(IPNetwork, AddressClass)] {
        rows.map { (IPNetwork($0.0)!, $0.1) }  // literals above: a typo fails every test at once
    }
}
