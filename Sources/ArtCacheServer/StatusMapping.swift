import ArtCacheCore
import ArtCacheFetch
import Hummingbird

/// How a failure reads over HTTP: status, the stable reason (also sent as
/// `X-ArtCache-Error`) and, for overload, how long to wait.
struct ServiceFailure: Error, Sendable {
    var status: HTTPResponse.Status
    var reason: String
    var retryAfter: Int?
    /// What exactly was wrong, for the answer's body (a bad option names
    /// its token and why); the reason alone when nil.
    var detail: String?

    static let badSignature = ServiceFailure(status: .forbidden, reason: "bad_signature")
    static let unsignedRefused = ServiceFailure(status: .forbidden, reason: "unsigned_refused")
    static let notFound = ServiceFailure(status: .notFound, reason: "not_found")
    static let badSource = ServiceFailure(status: .badRequest, reason: "invalid_source")
    static let overloaded = ServiceFailure(status: .tooManyRequests, reason: "overloaded", retryAfter: 1)
    static let missingSignature = ServiceFailure(status: .unauthorized, reason: "missing_signature")
    static let bodyTooLarge = ServiceFailure(status: .contentTooLarge, reason: "body_too_large")

    /// The documented mapping of pipeline errors (docs/http-api.md).
    init(_ error: ArtCacheError) {
        reason = error.reason
        switch error.code {
        case .invalidURL, .invalidRequest: status = .badRequest
        case .network(.blockedAddress), .network(.blockedSource), .network(.refusedScheme): status = .forbidden
        case .network(.timeout): status = .gatewayTimeout
        case .network: status = .badGateway
        case .httpStatus(let code): status = code == 404 || code == 410 ? .notFound : .badGateway
        case .notAnImage, .unsupported, .decode: status = .unprocessableContent
        case .tooLarge: status = .contentTooLarge
        case .notCached: status = .notFound
        case .cancelled: status = .serviceUnavailable
        case .storage, .configuration, .incompatibleSchema: status = .internalServerError
        case .storageFull:
            // 507: the service's own disk is full; a retry may work after eviction or a purge.
            status = HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
            retryAfter = 30
        }
    }

    init(status: HTTPResponse.Status, reason: String, retryAfter: Int? = nil, detail: String? = nil) {
        self.status = status
        self.reason = reason
        self.retryAfter = retryAfter
        self.detail = detail
    }
}
