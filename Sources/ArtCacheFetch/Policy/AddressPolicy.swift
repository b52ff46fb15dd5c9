import ArtCacheCore
import Foundation

/// Where origin connections may go: public addresses, plus the networks a
/// configuration opts back in. Checked by the downloader on the address
/// libcurl actually connects to, for every connection and redirect hop.
package struct AddressPolicy: Sendable, Equatable {
    package var allowedNetworks: [IPNetwork]

    package init(allowedNetworks: [IPNetwork] = []) { self.allowedNetworks = allowedNetworks }

    package func allows(_ address: IPAddress) -> Bool {
        if AddressClass.of(address) == .public { return true }
        let v4 = address.embeddedIPv4.map(IPAddress.v4)
        return allowedNetworks.contains { $0.contains(address) || (v4.map($0.contains) ?? false) }
    }
}
