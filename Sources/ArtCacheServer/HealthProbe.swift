import ArtCacheCore
import Foundation

/// The client side of `GET /health`, for `artcache health --url` (container
/// health checks, monitoring): one plain HTTP/1.1 request over a socket, no
/// redirects, no proxy, one deadline on the whole check (every address the
/// host resolves to is tried in turn within it). The service speaks
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

    /// One address to try: a socket address as `getaddrinfo` gives it.
    package struct Endpoint: Sendable {
        var storage = sockaddr_storage()
        var length: socklen_t = 0

        /// `127.0.0.1:port` (tests inject address lists made of these).
        package static func loopback(port: Int) -> Endpoint {
            var endpoint = Endpoint()
            withUnsafeMutableBytes(of: &endpoint.storage) { raw in
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                address.pointee.sin_family = sa_family_t(AF_INET)
                address.pointee.sin_port = in_port_t(UInt16(port).bigEndian)
                address.pointee.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
            }
            endpoint.length = socklen_t(MemoryLayout<sockaddr_in>.size)
            return endpoint
        }

        var family: Int32 { Int32(storage.ss_family) }
    }

    /// Every address `host` resolves to, in the resolver's order (`localhost`
    /// may give `::1`, then `127.0.0.1`).
    package static func resolve(_ host: String, port: Int) throws(ArtCacheError) -> [Endpoint] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, list != nil else {
            throw ArtCacheError(.network(.dns), "cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        var endpoints: [Endpoint] = []
        var next = list
        while let entry = next {
            var endpoint = Endpoint()
            let length = min(Int(entry.pointee.ai_addrlen), MemoryLayout<sockaddr_storage>.size)
            withUnsafeMutableBytes(of: &endpoint.storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: entry.pointee.ai_addr, count: length)) }
            endpoint.length = socklen_t(length)
            endpoints.append(endpoint)
            next = entry.pointee.ai_next
        }
        return endpoints
    }

    /// Asks `url` once, within `timeout` for the whole check: every address
    /// the host resolves to is tried in turn (`addresses` replaces the
    /// resolver: tests), each with what is left of the deadline. Throws
    /// `.network(...)` when the service cannot be reached or does not answer
    /// in time (the last address's failure), `.invalidURL` for a URL it
    /// cannot ask. Runs off Swift's cooperative pool.
    package static func check(_ url: String, timeout: Duration,
                              addresses: (@Sendable (String, Int) throws(ArtCacheError) -> [Endpoint])? = nil)
        async throws(ArtCacheError) -> Answer {
        let target = try target(url)
        do {
            return try await Blocking.run {
                let deadline = ContinuousClock.now + timeout
                let endpoints = try addresses.map { try $0(target.host, target.port) } ?? resolve(target.host, port: target.port)
                var failure = ArtCacheError(.network(.dns), "\(target.host) resolves to no address")
                for endpoint in endpoints {
                    do throws(ArtCacheError) {
                        return try exchange(target, at: endpoint, deadline: deadline, timeout: timeout)
                    } catch {
                        failure = error
                        if ContinuousClock.now >= deadline { break }
                    }
                }
                throw failure
            }
        } catch let error as ArtCacheError {
            throw error
        } catch {
            throw ArtCacheError(any: error, context: "health check of \(url)")
        }
    }

    /// Milliseconds left before `deadline` (0 when it has passed), for poll(2).
    private static func millisecondsLeft(_ deadline: ContinuousClock.Instant) -> Int32 {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return 0 }
        let ms = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(1, ms))
    }

    /// Waits for `events` on `fd` until `deadline`: false when it passed first.
    private static func wait(_ fd: Int32, _ events: Int32, until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let left = millisecondsLeft(deadline)
            guard left > 0 else { return false }
            var poller = pollfd(fd: fd, events: Int16(events), revents: 0)
            let ready = poll(&poller, 1, left)
            if ready > 0 { return true }
            // A timeout of poll(2) ends up to a millisecond early (whole
            // milliseconds): only the deadline itself ends the wait.
            if ready == 0 || errno == EINTR { continue }
            return true  // an error on the socket: the next call reports it
        }
    }

    private static func exchange(_ target: (host: String, port: Int, path: String), at endpoint: Endpoint,
                                 deadline: ContinuousClock.Instant, timeout: Duration) throws(ArtCacheError) -> Answer {
        let where_ = "\(target.host):\(target.port)"
        let fd = socket(endpoint.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw ArtCacheError(.network(.connect), "socket() failed (errno \(errno))") }
        defer { close(fd) }
        var endpoint = endpoint
        let started = withUnsafePointer(to: &endpoint.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, endpoint.length) }
        }
        if started != 0 {
            guard errno == EINPROGRESS else {
                throw ArtCacheError(.network(.connect), "cannot connect to \(where_) (\(String(cString: strerror(errno))))")
            }
            guard wait(fd, Int32(POLLOUT), until: deadline) else {
                throw ArtCacheError(.network(.timeout), "\(where_) did not accept a connection within \(timeout)")
            }
            var code: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &size)
            guard code == 0 else {
                throw ArtCacheError(.network(.connect), "cannot connect to \(where_) (\(String(cString: strerror(code))))")
            }
        }
        let hostHeader = target.host.contains(":") ? "[\(target.host)]:\(target.port)" : "\(target.host):\(target.port)"
        let request = Array("GET \(target.path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUser-Agent: artcache-health\r\nConnection: close\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            guard wait(fd, Int32(POLLOUT), until: deadline) else {
                throw ArtCacheError(.network(.timeout), "\(where_) did not take the request within \(timeout)")
            }
            let n = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) { continue }
            throw ArtCacheError(.network(.connection), "\(where_) closed the connection before the request was sent")
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < 64 * 1024 {
            guard wait(fd, Int32(POLLIN), until: deadline) else {
                throw ArtCacheError(.network(.timeout), "\(where_) did not answer within \(timeout)")
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buffer[0..<n]; continue }
            if n == 0 { break }
            if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
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
