import ArtCacheCore
import Foundation
import NIOCore

/// The server could not bind its address — a port another socket listens
/// on, an address not of this machine, a port the user may not take — read
/// from the server's own bind error and said in one line
/// (`cannot listen on 127.0.0.1:8080: address already in use`), instead of
/// a socket bound beforehand to find out (which another process could take
/// in between).
package struct ListenFailure: Error, CustomStringConvertible {
    package let description: String

    /// The failure `error` is when it is the listener's bind (or its
    /// address's resolution) failing for `authority` (``ServiceSettings/listen``);
    /// nil for any other error.
    package init?(_ error: any Error, authority: String) {
        if let io = error as? IOError {
            description = "cannot listen on \(authority): \(FileErrorText.system(io.errnoCode))"
        } else if let address = error as? SocketAddressError {
            description = "cannot listen on \(authority): \(Self.describe(address))"
        } else {
            return nil
        }
    }

    private static func describe(_ error: SocketAddressError) -> String {
        switch error {
        case .unknown: "unknown host"
        case .unsupported: "unsupported address"
        default: "invalid address"
        }
    }
}
