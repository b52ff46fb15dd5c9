import ArtCacheCore
import ArtCacheFetch
import Foundation

/// The client side of `GET /health`, for `artcache health --url` (container
/// health checks, monitoring): one GET through the libcurl client the tier
/// and the front warmer use for the operator's endpoints
/// (``Downloader/endpoint(_:priority:)``: no address policy, since a health
/// check's target is nearly always loopback or private; no redirect, no
/// proxy, no retry), with one deadline on the whole check: libcurl tries
/// every address the host resolves to in turn within it. The service
/// speaks plain HTTP (TLS ends in front of it), so `http://` is the only
/// scheme.
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

    /// Asks `url` once, within `timeout` for the whole check: every address
    /// the host resolves to is tried in turn (`addresses` replaces the
    /// resolver's: tests). Throws `.network(...)` when the service cannot be
    /// reached or does not answer in time (the last address's failure),
    /// `.invalidURL` for a URL it cannot ask. Any status comes back.
    package static func check(_ url: String, timeout: Duration, addresses: [String] = []) async throws(ArtCacheError) -> Answer {
        let target = try target(url)
        let authority = (target.host.contains(":") ? "[\(target.host)]" : target.host) + ":\(target.port)"
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        var request = EndpointRequest(url: "http://\(authority)\(target.path)", timeout: seconds)
        request.accept = "*/*"
        request.headers = ["User-Agent: artcache-health"]
        request.maxBody = 1 << 20
        request.addresses = addresses
        let downloader: Downloader
        do {
            downloader = try Downloader(settings: DownloadSettings(), logger: .init(label: "artcache.health"))
        } catch {
            throw ArtCacheError(any: error, context: "health check of \(url)")
        }
        defer { downloader.shutdown() }
        do throws(DownloadError) {
            let answer = try await downloader.endpoint(request, priority: PriorityHandle(.high))
            return Answer(status: answer.status, summary: summary(answer.body))
        } catch {
            throw failure(error, url: request.url, host: target.host, authority: authority, timeout: timeout)
        }
    }

    /// The first line of a body, at most 200 characters.
    package static func summary(_ body: Data) -> String {
        String(String(decoding: body.prefix(4096), as: UTF8.self).prefix { !$0.isNewline }.prefix(200))
    }

    /// A failed check in the terms of `health`: what was not reached, and how.
    static func failure(_ error: DownloadError, url: String, host: String, authority: String, timeout: Duration) -> ArtCacheError {
        let code = ArtCacheError(error).code
        let message = switch error.code {
        case .dns: "cannot resolve \(host)"
        case .connect: "cannot connect to \(authority) (\(error.cause ?? "refused"))"
        case .timeout where error.timedOutConnecting: "\(authority) did not accept a connection within \(timeout)"
        case .timeout: "\(authority) did not answer within \(timeout)"
        default: "\(authority): \(error.shortCause(url: url))"
        }
        return ArtCacheError(code, message, underlying: error)
    }
}
