import Foundation
import HTTPTypes
import Hummingbird

/// Every answer the router gives — `/health`, `/metrics`, the manifest and
/// info endpoints, and the refusals of paths or methods it does not serve —
/// is counted and logged as an image's is (`artcache_http_requests_total`,
/// `artcache_http_request_duration_seconds`, the access log); a path it does
/// not know is 404 `not_found`, a method a known path does not take 405
/// `method_not_allowed` with `Allow`.
extension ThumbnailService {
    /// The router's answer to `request` (`respond`), counted and logged;
    /// what it refuses answered as this service's typed refusals.
    func routed(_ request: Request, _ respond: () async throws -> Response) async -> Response {
        let started = ContinuousClock.now
        var response: Response
        do {
            // The router turns the HTTP errors of its routes into answers itself.
            response = try await respond()
        } catch {
            logger.error("unexpected failure", metadata: ["error": "\(error)"])
            response = failure(ServiceFailure(status: .internalServerError, reason: "internal"))
        }
        // The router's own 404 (no route for the path or the method) as ours.
        if response.status == .notFound, response.headers[.artcacheError] == nil {
            response = notRouted(method: request.method, path: request.uri.path)
        }
        record(request, response, tier: response.status.code >= 400 ? "refused" : "endpoint", since: started)
        return response
    }

    /// 405 when `path` is one this service serves with other methods, else 404.
    func notRouted(method: HTTPRequest.Method, path: String) -> Response {
        guard let allowed = Self.methods(path: path), !allowed.contains(method) else { return failure(.notFound) }
        var response = failure(ServiceFailure(status: .methodNotAllowed, reason: "method_not_allowed",
                                              detail: "\(method.rawValue) \(path): use \(allowed.map(\.rawValue).joined(separator: " or "))"))
        response.headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
        return response
    }

    /// The methods a path of this service takes; nil for a path it does not serve.
    static func methods(path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        switch path {
        case "/health", "/metrics": return [.get, .head]
        case "/v1/manifest": return [.post]
        default:
            guard segments.first?.isEmpty == true else { return nil }
            if segments.count == 4 { return [.get, .head] }  // /{signature}/{options}/{source}
            if segments.count == 5, segments[1] == "v1", segments[2] == "info" { return [.get, .head] }
            return nil
        }
    }

    /// Counts and logs one answer (the image route's do their own, with their tier).
    func record(_ request: Request, _ response: Response, tier: String, since started: ContinuousClock.Instant) {
        let elapsed = (ContinuousClock.now - started).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        let bytes = request.method == .head ? 0 : response.body.contentLength ?? 0
        metrics.answered(status: response.status.code, tier: tier, seconds: seconds, bytes: bytes)
        guard settings.accessLog else { return }
        logger.access(AccessLine(method: request.method.rawValue, path: request.uri.path, status: response.status.code,
                                 tier: tier, bytes: bytes, seconds: seconds, error: response.headers[.artcacheError]),
                      source: Self.logSource)
    }

    /// 400 `unexpected_query`: an image or info path takes no query string
    /// (one spelling per answer: `?x=1` would be another key in a front cache).
    static func unexpectedQuery(_ request: Request) -> ServiceFailure? {
        guard let query = request.uri.query else { return nil }
        return ServiceFailure(status: .badRequest, reason: "unexpected_query",
                              detail: "this path takes no query string (got ?\(query))")
    }
}
