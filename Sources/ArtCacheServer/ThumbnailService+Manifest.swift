import ArtCacheCore
import ArtCacheRender
import ArtCacheResultSets
import ArtCacheServiceGrammar
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `POST /v1/manifest` and `GET /v1/info/{signature}/{source}`: what a page
/// needs to lay out a result set's images (``ImagePipeline/manifest(for:sizes:fit:signer:priority:)``),
/// or one image's size and placeholder, as JSON.
extension ThumbnailService {
    static let signatureHeader = HTTPField.Name("X-ArtCache-Signature")!
    static let expiresHeader = HTTPField.Name("X-ArtCache-Expires")!

    /// `POST /v1/manifest?sizes=100x100,300x300`: the body is a result set
    /// (the formats `prefetch` reads), at most `[service] manifest_max_body`
    /// (413). `X-ArtCache-Signature` signs the whole request with any service
    /// key — method, path, query, `X-ArtCache-Expires` and body
    /// (``ServiceURLSigner/signature(method:path:query:expires:body:)``) —
    /// so a request seen once cannot be replayed with other sizes, nor after
    /// its expiry: 401 `missing_signature` or `missing_expires` without
    /// them, 403 `bad_signature` when wrong, 403 `signature_expired` past
    /// the expiry or `expires_too_far` when it is more than
    /// `[service] manifest_signature_max_age` ahead. Unsigned requests only
    /// on a loopback listener with `allow_unsigned`. Thumbnail references
    /// are this service's signed paths.
    ///
    /// Nothing is read before it can be refused: a missing signature, a
    /// declared length over the limit or bad `sizes` are answered on the
    /// headers (with `Connection: close` when a body was coming: it is never
    /// drained). The body is then read inside an admission slot, under the
    /// request's deadline and cancelled when the client leaves, like an
    /// image: it is counted while it streams (chunked or not), so at most
    /// `max_inflight` bodies of at most `manifest_max_body` are held at once.
    func manifest(_ request: Request, context: ServiceRequestContext) async -> Response {
        let declared = request.headers[.contentLength].flatMap { Int64($0) }
        let bodyComing = (declared ?? 0) > 0 || request.headers[.transferEncoding] != nil
        let signature = request.headers[Self.signatureHeader]
        if signature == nil, !settings.allowUnsigned { return failure(.missingSignature, closing: bodyComing) }
        if let declared, declared > settings.manifestMaxBody { return failure(.bodyTooLarge, closing: true) }
        let expires: Int
        switch signature == nil ? .success(0)
            : Self.expiry(request.headers[Self.expiresHeader], now: Date(), maxAge: settings.manifestSignatureMaxAge) {
        case .success(let seconds): expires = seconds
        case .failure(let refusal): return failure(refusal, closing: bodyComing)
        }
        let query = request.uri.query ?? ""
        var sizes = pipeline.configuration.thumbnails.sizes.map { ImageSize(width: $0.width, height: $0.height) }
        if let text = request.uri.queryParameters.get("sizes") {
            let parsed = text.split(separator: ",").map { ImageSize(String($0)) }
            guard !parsed.isEmpty, parsed.count <= 16, !parsed.contains(nil) else {
                return failure(ServiceFailure(status: .badRequest, reason: "invalid_sizes"), closing: bodyComing)
            }
            sizes = parsed.compactMap { $0 }
        }
        let bodyRead = Locked(false)
        do {
            let data = try await guarded(connection: watch(context)) { [self, sizes] in
                let body: ByteBuffer
                do {
                    body = try await request.body.collect(upTo: Int(settings.manifestMaxBody))
                } catch is NIOTooManyBytesError {
                    throw ServiceFailure.bodyTooLarge
                }
                bodyRead.withLock { $0 = true }
                let bytes = Array(buffer: body)
                if let signature, !signer.isValid(signature: signature, method: request.method.rawValue, path: request.uri.path,
                                                  query: query, expires: expires, body: bytes) {
                    throw ServiceFailure.badSignature
                }
                let resultSet: ResultSet
                do throws(ResultSetError) {
                    resultSet = try ResultSet.parse(Data(bytes))
                } catch {
                    throw ServiceFailure(status: .badRequest, reason: error.code.rawValue)
                }
                return try await pipeline.manifest(for: resultSet, sizes: sizes, signer: signer).json()
            }
            return json(data)
        } catch {
            return failure(Self.mapped(error), closing: bodyComing && !bodyRead.withLock { $0 })
        }
    }

    /// A signed request's `X-ArtCache-Expires` (decimal seconds since the
    /// epoch), when it is still to come and at most `maxAge` ahead of `now`.
    static func expiry(_ header: String?, now: Date, maxAge: TimeInterval) -> Result<Int, ServiceFailure> {
        guard let header else {
            return .failure(ServiceFailure(status: .unauthorized, reason: "missing_expires",
                                           detail: "a signed request needs X-ArtCache-Expires (seconds since the epoch)"))
        }
        guard header.utf8.count <= 12, header.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let seconds = Int(header) else {
            return .failure(ServiceFailure(status: .badRequest, reason: "invalid_expires",
                                           detail: "X-ArtCache-Expires must be decimal seconds since the epoch"))
        }
        let left = Double(seconds) - now.timeIntervalSince1970
        if left < 0 {
            return .failure(ServiceFailure(status: .forbidden, reason: "signature_expired",
                                           detail: "expired \(Int(-left)) s ago; sign the request again"))
        }
        if left > maxAge {
            return .failure(ServiceFailure(status: .forbidden, reason: "expires_too_far",
                                           detail: "X-ArtCache-Expires is \(Int(left)) s ahead; at most \(Int(maxAge)) s (manifest_signature_max_age)"))
        }
        return .success(seconds)
    }

    /// A refusal for what a guarded request threw.
    static func mapped(_ error: any Error) -> ServiceFailure {
        switch error {
        case let failure as ServiceFailure: failure
        case let error as ArtCacheError: ServiceFailure(error)
        case is CancellationError: ServiceFailure(ArtCacheError(.cancelled, "the client went away"))
        default: ServiceFailure(status: .internalServerError, reason: "internal")
        }
    }

    /// `GET /v1/info/{signature}/{source}`: one image's size and placeholder
    /// (`url`, `width`, `height`, `color`, `thumbhash`, `placeholder`,
    /// `animated`, `frames`),
    /// fetched first when not cached; signed as an image path with empty
    /// options (``ServiceURLSigner/infoPath(for:)``).
    /// Admitted like an image, under the request's deadline, cancelled when
    /// the client leaves.
    func info(_ request: Request, signature: String, source encoded: String, context: ServiceRequestContext) async -> Response {
        if let refusal = Self.unexpectedQuery(request) { return failure(refusal) }
        do {
            _ = try verify(signature: signature, rest: "//" + encoded)
        } catch {
            return failure(error)
        }
        guard let source = ServiceURLSigner.decodeSource(encoded) else { return failure(.badSource) }
        do {
            let info = try await guarded(connection: watch(context)) { [pipeline] in try await pipeline.info(for: source) }
            var object: [String: Any] = ["url": info.url, "width": info.width, "height": info.height, "color": info.color,
                                         "thumbhash": info.thumbHashBase64, "animated": info.animated, "frames": info.frames]
            object["placeholder"] = info.placeholderDataURL() ?? NSNull()
            return json(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
        } catch {
            return failure(Self.mapped(error))
        }
    }

    private func json(_ data: Data) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        headers[.contentLength] = String(data.count)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
