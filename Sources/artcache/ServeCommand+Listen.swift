import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `serve` could not bind its address (exit 1, one line).
struct ListenError: Error, CustomStringConvertible {
    let description: String
}

extension ServeCommand {
    /// Binds `host:port` once, as the server will (`SO_REUSEADDR`), and lets
    /// go: a port another socket listens on, an address not of this machine
    /// or a port the user may not take is told in one line
    /// (`cannot listen on 127.0.0.1:8080: address already in use`) before
    /// the cache is opened, not as the service group's failure and its logs.
    /// Port 0 (any free one) is not checked.
    static func checkListen(host: String, port: Int) throws {
        guard port != 0 else { return }
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &found)
        guard resolved == 0, let first = found else {
            throw ListenError(description: "cannot listen on \(authority): \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(found) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { throw ListenError(description: "cannot listen on \(authority): \(Output.systemReason(errno))") }
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            throw ListenError(description: "cannot listen on \(authority): \(Output.systemReason(errno))")
        }
    }
}
