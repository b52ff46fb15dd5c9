import Foundation
import Hummingbird
import NIOCore

extension OriginServer {
    static func installRoutes(_ router: Router<BasicRequestContext>, box: ServerBox) {
        router.get("**") { request, _ -> Response in
            guard let server = box.value else { return Response(status: .serviceUnavailable) }
            let path = request.uri.path
            let host = request.head.authority ?? "?"
            server.begin(path: path, host: host)
            defer { server.end(host: host) }
            return try await server.respond(to: request, path: path)
        }
    }

    private func respond(to request: Request, path: String) async throws -> Response {
        let parts = path.split(separator: "/").map(String.init)
        guard let first = parts.first else { return Response(status: .notFound) }
        switch (first, parts.count) {
        case ("img", 2):
            return image(parts[1], request: request)
        case ("status", 2):
            return Response(status: HTTPResponse.Status(code: Int(parts[1]) ?? 500))
        case ("flaky", 3):
            guard requestCount(path) > Int(parts[1]) ?? 0 else { return Response(status: .internalServerError) }
            return image(parts[2], request: request)
        case ("ratelimit", 4):
            guard requestCount(path) > Int(parts[1]) ?? 0 else {
                var headers = HTTPFields()
                headers[.retryAfter] = parts[2]
                return Response(status: .tooManyRequests, headers: headers)
            }
            return image(parts[3], request: request)
        case ("hold", 3):
            try await Task.sleep(nanoseconds: UInt64(Int(parts[1]) ?? 0) * 1_000_000)
            return image(parts[2], request: request)
        case ("slow", 3):
            guard let resource = resource(parts[2]) else { return Response(status: .notFound) }
            let delay = UInt64(Int(parts[1]) ?? 10) * 1_000_000
            let body = resource.body
            return Response(status: .ok, headers: headers(for: resource),
                            body: ResponseBody(contentLength: body.count) { writer in
                                var offset = 0
                                while offset < body.count {
                                    let end = min(offset + 256, body.count)
                                    try await writer.write(ByteBuffer(bytes: body[offset..<end]))
                                    offset = end
                                    try await Task.sleep(nanoseconds: delay)
                                }
                                try await writer.finish(nil)
                            })
        case ("truncated", 2):
            guard let resource = resource(parts[1]) else { return Response(status: .notFound) }
            let body = resource.body
            return Response(status: .ok, headers: headers(for: resource),
                            body: ResponseBody(contentLength: body.count) { writer in
                                try await writer.write(ByteBuffer(bytes: body.prefix(body.count / 2)))
                                throw OriginError(message: "connection dropped on purpose")
                            })
        case ("redirect", 3):
            let remaining = Int(parts[1]) ?? 0
            let next = remaining <= 1 ? "/img/\(parts[2])" : "/redirect/\(remaining - 1)/\(parts[2])"
            return redirect(to: next)
        case ("loop", 1):
            return redirect(to: "/loop")
        case ("endless", 1):
            var headers = HTTPFields()
            headers[.contentType] = "image/png"
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                let started = Date()
                let chunk = ByteBuffer(bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 65528))
                var sent = 0
                while sent < 1 << 30, Date().timeIntervalSince(started) < 60 {
                    try await writer.write(chunk)
                    sent += chunk.readableBytes
                }
                try await writer.finish(nil)
            })
        case ("html200", 1):
            var headers = HTTPFields()
            headers[.contentType] = "image/jpeg"
            let page = "<!DOCTYPE html><html><head><title>Error</title></head><body><h1>Oops</h1></body></html>"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
        default:
            return Response(status: .notFound)
        }
    }

    private func headers(for resource: Resource) -> HTTPFields {
        var headers = HTTPFields()
        if let type = resource.contentType { headers[.contentType] = type }
        if let etag = resource.etag { headers[.eTag] = etag }
        if let cacheControl = resource.cacheControl { headers[.cacheControl] = cacheControl }
        return headers
    }

    private func image(_ name: String, request: Request) -> Response {
        guard let resource = resource(name) else { return Response(status: .notFound) }
        var headers = headers(for: resource)
        if let etag = resource.etag, request.headers[.ifNoneMatch] == etag {
            noteNotModified()
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: resource.body)))
    }

    private func redirect(to location: String) -> Response {
        var headers = HTTPFields()
        headers[.location] = location
        return Response(status: .found, headers: headers)
    }
}
