@_spi(Benchmarks) import ArtCacheCore
import Foundation

/// The client side of `GET /health`, for `artcache health --url` (container
/// health checks, monitoring): one plain HTTP/1.1 request over a socket, no
/// redirects, no proxy, a deadline on the whole exchange. The service speaks
/// plain HTTP (TLS ends in front of it), so `http://` is the only scheme.
///
/// Not the downloader: that one refuses loopback and private addresses by
/// policy, and a health check's target is nearly always one of them.
package enum HealthProbe {
    package struct Answer: Sendable, Equatable {
        /// The HTTP status (200 healthy, 503 unhealthy).
        package var status: Int
        /// The first line of the body (`ok`, `unhealthy: storage`...).
        package var summary: String
    }

    /// The URL a probe asks: `url` itself, or its `/health` when it names
    /// only the service (`http://127.0.0.1:8080` or `.../`).
    package static func target(_ url: String) throws(ArtCacheError) -> (host: String, port: Int, path: String) {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "http",
              let host = components.host, !host.isEmpty else {
            throw ArtCacheError(.invalidURL, "health --url takes an http:// URL of the service (e.g. http://127.0.0.1:8080/health), not '\(url)'")
        }
        let port = components.port ?? 80
        guard (1...65535).contains(port) else { throw ArtCacheError(.invalidURL, "health --url: port \(port) is out of range") }
        var path = components.percentEncodedPath
        if path.isEmpty || path == "/" { path = "/health" }
        if let query = components.percentEncodedQuery { path += "?" + query }
        // `[::1]` comes back without brackets from URLComponents.
        return (host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, port, path)
    }

    /// Asks `url` once, within `timeout`. Throws `.network(...)` when the
    /// service cannot be reached or does not answer in time, `.invalidURL`
    /// for a URL it cannot ask. Runs off Swift's cooperative pool.
    package static func check(_ url: String, timeout: Duration) async throws(ArtCacheError) -> Answer {
        let target = try target(url)
        do {
            return try await Blocking.run { try exchange(target, timeout: timeout) }
        } catch let error as ArtCacheError {
            throw error
        } catch {
            throw ArtCacheError(any: error, context: "health check of \(url)")
        }
    }

    private static func exchange(_ target: (host: String, port: Int, path: String), timeout: Duration) throws -> Answer {
        let deadline = ContinuousClock.now + timeout
        let where_ = "\(target.host):\(target.port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(target.host, String(target.port), &hints, &list) == 0, let first = list else {
            throw ArtCacheError(.network(.dns), "cannot resolve \(target.host)")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ArtCacheError(.network(.connect), "socket() failed (errno \(errno))") }
        defer { close(fd) }
        var tv = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        if tv.tv_sec == 0 && tv.tv_usec == 0 { tv.tv_usec = 1000 }
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let code = errno
            if code == EINPROGRESS || code == EAGAIN || code == ETIMEDOUT {
                throw ArtCacheError(.network(.timeout), "\(where_) did not accept a connection within \(timeout)")
            }
            throw ArtCacheError(.network(.connect), "cannot connect to \(where_) (\(String(cString: strerror(code))))")
        }
        let hostHeader = target.host.contains(":") ? "[\(target.host)]:\(target.port)" : "\(target.host):\(target.port)"
        let request = Array("GET \(target.path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUser-Agent: artcache-health\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            throw ArtCacheError(.network(.connection), "\(where_) closed the connection before the request was sent")
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < 64 * 1024 {
            if ContinuousClock.now > deadline {
                throw ArtCacheError(.network(.timeout), "\(where_) did not answer within \(timeout)")
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buffer[0..<n]; continue }
            if n == 0 { break }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                throw ArtCacheError(.network(.timeout), "\(where_) did not answer within \(timeout)")
            }
            throw ArtCacheError(.network(.connection), "reading from \(where_) failed (\(String(cString: strerror(errno))))")
        }
        return try parse(received, from: where_)
    }

    /// The status and the body's first line of an HTTP/1.x answer.
    package static func parse(_ bytes: [UInt8], from where_: String) throws(ArtCacheError) -> Answer {
        let text = String(decoding: bytes, as: UTF8.self)
        let statusLine = text.prefix { $0 != "\r" && $0 != "\n" }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]), (100...599).contains(status) else {
            throw ArtCacheError(.network(.connection), "\(where_) did not answer HTTP (\(statusLine.prefix(40)))")
        }
        var summary = ""
        if let split = text.range(of: "\r\n\r\n") {
            summary = String(text[split.upperBound...].prefix { $0 != "\r" && $0 != "\n" }.prefix(200))
        }
        return Answer(status: status, summary: summary)
    }
}
