import Foundation

/// A loopback port held by a bound socket that does not listen: every
/// connect to it is refused at once, and no other server (a parallel test's)
/// can take the port while it is held. `listen()` turns the same socket into
/// an origin on the same port: "the origin comes back" without a port being
/// closed and reused.
public final class HeldPort: @unchecked Sendable {
    // @unchecked Sendable: `fd` is set once in init and handed over at most
    // once (`adopted`, under `lock`); the socket itself is only closed here.
    private let lock = NSLock()
    private var adopted = false
    private let fd: Int32
    public let port: Int

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw OriginError(message: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw OriginError(message: "cannot bind 127.0.0.1:0: \(reason)")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// An origin listening on this socket (once; the origin owns it then).
    public func listen() throws -> OriginServer {
        try lock.withLock {
            guard !adopted else { throw OriginError(message: "port \(port) already listens") }
            adopted = true
        }
        return try OriginServer.adopting(fd, port: port)
    }

    deinit {
        if !lock.withLock({ adopted }) { close(fd) }
    }
}
