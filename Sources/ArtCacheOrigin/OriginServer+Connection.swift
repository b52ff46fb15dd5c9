import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One parsed request head.
struct OriginRequest {
    var path: String
    /// The request target as received (path and query, escapes as sent).
    var target: String
    var headers: [String: String]  // lowercased names
    var wantsClose: Bool { headers["connection"]?.lowercased() == "close" }
}

extension OriginServer {
    /// Serves requests on one keep-alive connection until it closes.
    func serve(connection fd: Int32) {
        var timeout = timeval(tv_sec: 30, tv_usec: 0)  // idle connections end by themselves
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8]()
        while let request = readRequest(fd, buffer: &buffer) {
            let host = request.headers["host"] ?? "?"
            mutate { s in
                s.requests[request.path, default: 0] += 1
                s.requestLog.append(request.path)
                s.targetLog.append(request.target)
                s.active += 1
                s.maxActive = max(s.maxActive, s.active)
                s.activeByHost[host, default: 0] += 1
                s.maxActiveByHost[host] = max(s.maxActiveByHost[host] ?? 0, s.activeByHost[host]!)
                s.answering[fd] = host
            }
            let keepOpen = respond(to: request, on: fd)
            answered(fd)
            if !keepOpen || request.wantsClose { return }
        }
    }

    private func readRequest(_ fd: Int32, buffer: inout [UInt8]) -> OriginRequest? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = buffer.firstRange(of: terminator) {
                let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                var lines = head.components(separatedBy: "\r\n")
                let requestLine = lines.removeFirst().split(separator: " ")
                guard requestLine.count >= 2 else { return nil }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let target = String(requestLine[1])
                let path = String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                return OriginRequest(path: path, target: target, headers: headers)
            }
            guard buffer.count < 65536 else { return nil }
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { return nil }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// Writes one response; false when the connection must close.
    private func respond(to request: OriginRequest, on fd: Int32) -> Bool {
        let parts = request.path.split(separator: "/").map(String.init)
        let resources = state.withLock { $0.resources }
        /// The full Content-Length declared, half the body sent, then closed.
        func cutShort(_ body: Data, headers: [(String, String)]) -> Bool {
            _ = send(fd, status: 200, headers: headers, contentLength: body.count)
            _ = write(fd, body.prefix(body.count / 2))
            return false  // close with the body half sent
        }
        func image(_ name: String) -> Bool {
            guard let resource = resources[name] else { return send(fd, status: 404) }
            var headers: [(String, String)] = resource.headers.sorted { $0.key < $1.key }
            if let cacheControl = resource.cacheControl { headers.append(("Cache-Control", cacheControl)) }
            guard resource.status == 200 else { return send(fd, status: resource.status, headers: headers) }
            if let etag = resource.etag { headers.append(("ETag", etag)) }
            if let etag = resource.etag, request.headers["if-none-match"] == etag {
                mutate { $0.notModified += 1 }
                return send(fd, status: 304, headers: resource.bare304 ? [("ETag", etag)] : headers)
            }
            if let type = resource.contentType { headers.append(("Content-Type", type)) }
            if resource.cutShort { return cutShort(resource.body, headers: headers) }
            return send(fd, status: 200, headers: headers, body: resource.body)
        }
        switch (parts.first ?? "", parts.count) {
        case ("img", 2):
            return image(parts[1])
        case ("status", 2):
            return send(fd, status: Int(parts[1]) ?? 500)
        case ("flaky", 3):
            guard requestCount(request.path) > Int(parts[1]) ?? 0 else { return send(fd, status: 500) }
            return image(parts[2])
        case ("ratelimit", 4):
            guard requestCount(request.path) > Int(parts[1]) ?? 0 else {
                return send(fd, status: 429, headers: [("Retry-After", parts[2])])
            }
            return image(parts[3])
        case ("hold", 3):
            usleep(UInt32(Int(parts[1]) ?? 0) * 1000)
            return image(parts[2])
        case ("gate", 2):
            // Held until the test calls openGate() (or gateLimit passes).
            _ = block(until: { $0.gateOpen }, seconds: gateLimit)
            return image(parts[1])
        case ("gate", 3):
            // Held until N requests for this path have arrived (this one counted).
            let (path, count) = (request.path, Int(parts[1]) ?? 1)
            guard block(until: { ($0.requests[path] ?? 0) >= count }, seconds: gateLimit) else {
                return send(fd, status: 504)
            }
            return image(parts[2])
        case ("slow", 3):
            guard let resource = resources[parts[2]] else { return send(fd, status: 404) }
            let delay = UInt32(Int(parts[1]) ?? 10) * 1000
            guard send(fd, status: 200, headers: [("Content-Type", resource.contentType ?? "")], contentLength: resource.body.count) else { return false }
            var offset = 0
            while offset < resource.body.count {
                let end = min(offset + 256, resource.body.count)
                guard write(fd, resource.body[offset..<end]) else {
                    mutate { $0.abortedStreams[request.path, default: 0] += 1 }
                    return false
                }
                offset = end
                usleep(delay)
            }
            return true
        case ("truncated", 2):
            guard let resource = resources[parts[1]] else { return send(fd, status: 404) }
            return cutShort(resource.body, headers: [("Content-Type", resource.contentType ?? "")])
        case ("redirect", 3):
            let remaining = Int(parts[1]) ?? 0
            let next = remaining <= 1 ? "/img/\(parts[2])" : "/redirect/\(remaining - 1)/\(parts[2])"
            return send(fd, status: 302, headers: [("Location", next)])
        case ("elsewhere", 3):
            // A redirect to another host (HOST:PORT as given), for the address-policy tests.
            let target = parts[1].removingPercentEncoding ?? parts[1]
            return send(fd, status: 302, headers: [("Location", "http://\(target)/img/\(parts[2])")])
        case ("location", 2):
            // Decoded as bytes, not as a String: a Location that is not UTF-8 reaches the client as sent.
            guard let location = Self.percentDecoded(parts[1]) else { return send(fd, status: 400) }
            let head = Data("HTTP/1.1 302 Found\r\nLocation: ".utf8) + location + Data("\r\nContent-Length: 0\r\n\r\n".utf8)
            return write(fd, head)
        case ("loop", 1):
            return send(fd, status: 302, headers: [("Location", "/loop")])
        case ("endless", 1):
            guard write(fd, Data("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nConnection: close\r\n\r\n".utf8)) else { return false }
            let chunk = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 65528))
            let started = Date()
            var sent = 0
            while sent < 1 << 30, Date().timeIntervalSince(started) < 60 {
                guard write(fd, chunk) else {
                    mutate { $0.abortedStreams[request.path, default: 0] += 1 }
                    break
                }
                sent += chunk.count
            }
            return false
        case ("html200", 1):
            let page = "<!DOCTYPE html><html><head><title>Error</title></head><body><h1>Oops</h1></body></html>"
            return send(fd, status: 200, headers: [("Content-Type", "image/jpeg")], body: Data(page.utf8))
        default:
            return send(fd, status: 404)
        }
    }

    /// The request on `fd` is no longer counted as being answered (once).
    private func answered(_ fd: Int32) {
        mutate { s in
            guard let host = s.answering.removeValue(forKey: fd) else { return }
            s.active -= 1
            s.activeByHost[host, default: 1] -= 1
        }
    }

    /// Sends a status line, headers and (unless `contentLength` is given
    /// without a body) the body. The request stops counting as being
    /// answered before the first byte goes out.
    private func send(_ fd: Int32, status: Int, headers: [(String, String)] = [], body: Data = Data(),
                      contentLength: Int? = nil) -> Bool {
        answered(fd)
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for (name, value) in headers where !value.isEmpty { head += "\(name): \(value)\r\n" }
        if status != 304 { head += "Content-Length: \(contentLength ?? body.count)\r\n" }
        head += "\r\n"
        guard write(fd, Data(head.utf8)) else { return false }
        return contentLength != nil || body.isEmpty || write(fd, body)
    }

    private func write(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.send(fd, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 {
                    if n < 0 && errno == EINTR { continue }
                    return false
                }
                offset += n
            }
            return true
        }
    }

    /// `%XX` escapes decoded to bytes; nil for a malformed escape.
    static func percentDecoded(_ text: String) -> Data? {
        let bytes = Array(text.utf8)
        var out = Data()
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "%") else {
                out.append(bytes[index])
                index += 1
                continue
            }
            let hex = bytes.dropFirst(index + 1).prefix(2)
            guard hex.count == 2, hex.allSatisfy({ Character(Unicode.Scalar($0)).isHexDigit }),
                  let value = UInt8(String(decoding: hex, as: UTF8.self), radix: 16) else { return nil }
            out.append(value)
            index += 3
        }
        return out
    }

    private static func reason(_ status: Int) -> String {
        [200: "OK", 302: "Found", 304: "Not Modified", 404: "Not Found", 429: "Too Many Requests",
         500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"][status] ?? "Status"
    }
}
