import ArtCache
@_spi(Benchmarks) import ArtCacheCore
@_spi(Benchmarks) import ArtCacheRender
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `POST /v1/manifest` and `GET /v1/info/{signature}/{source}`: what a page
/// needs to lay out a result set's images (``ImagePipeline/manifest(for:sizes:fit:signer:priority:)``),
/// or one image's size and placeholder, as JSON.
extension ThumbnailService {
    static let signatureHeader = HTTPField.Name("X-ArtCache-Signature")!

    /// `POST /v1/manifest?sizes=100x100,300x300`: the body is a result set
    /// (the formats `prefetch` reads), at most `[service] manifest_max_body`
    /// (413); `X-ArtCache-Signature` is base64url(HMAC-SHA256(key, salt +
    /// body)) with any service key (401 without it, 403 when wrong; unsigned
    /// bodies only on a loopback listener with `allow_unsigned`). Thumbnail
    /// references are this service's signed paths.
    func manifest(_ request: Request, context: ServiceRequestContext) async -> Response {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Int(settings.manifestMaxBody))
        } catch {
            return failure(ServiceFailure(status: .contentTooLarge, reason: "body_too_large"))
        }
        let bytes = Array(buffer: body)
        switch request.headers[Self.signatureHeader] {
        case nil:
            guard settings.allowUnsigned else { return failure(ServiceFailure(status: .unauthorized, reason: "missing_signature")) }
        case let signature?:
            guard signer.isValid(signature: signature, forBody: bytes) else { return failure(.badSignature) }
        }
        var sizes = pipeline.configuration.thumbnails.sizes.map { ImageSize(width: $0.width, height: $0.height) }
        if let text = request.uri.queryParameters.get("sizes") {
            let parsed = text.split(separator: ",").map { part -> ImageSize? in
                let fields = part.lowercased().split(separator: "x").compactMap { Int($0) }
                guard fields.count == 2, fields.allSatisfy({ $0 >= 1 && $0 <= 10_000 }) else { return nil }
                return ImageSize(width: fields[0], height: fields[1])
            }
            guard !parsed.isEmpty, parsed.count <= 16, !parsed.contains(nil) else {
                return failure(ServiceFailure(status: .badRequest, reason: "invalid_sizes"))
            }
            sizes = parsed.compactMap { $0 }
        }
        let resultSet: ResultSet
        do {
            resultSet = try ResultSetParser.parse(Data(bytes))
        } catch {
            return failure(ServiceFailure(status: .badRequest, reason: error.code.rawValue))
        }
        do {
            let manifest = try await pipeline.manifest(for: resultSet, sizes: sizes, signer: signer)
            return json(try manifest.json())
        } catch let error as ArtCacheError {
            return failure(ServiceFailure(error))
        } catch {
            return failure(ServiceFailure(status: .internalServerError, reason: "internal"))
        }
    }

    /// `GET /v1/info/{signature}/{source}`: one image's size and placeholder
    /// (`url`, `width`, `height`, `color`, `thumbhash`, `placeholder`),
    /// fetched first when not cached; signed as an image path with empty
    /// options (``ServiceURLSigner/infoPath(for:)``).
    func info(signature: String, source encoded: String) async -> Response {
        do {
            _ = try verify(signature: signature, rest: "//" + encoded)
        } catch {
            return failure(error)
        }
        guard let source = ServiceURLSigner.decodeSource(encoded) else { return failure(.badSource) }
        do {
            let info = try await admission.run { [pipeline] in try await pipeline.info(for: source) }
            var object: [String: Any] = ["url": info.url, "width": info.width, "height": info.height, "color": info.color,
                                         "thumbhash": info.thumbHashBase64]
            object["placeholder"] = info.placeholderDataURL() ?? NSNull()
            return json(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
        } catch Admission.Refusal.overloaded {
            return failure(.overloaded)
        } catch let error as ArtCacheError {
            return failure(ServiceFailure(error))
        } catch {
            return failure(ServiceFailure(status: .internalServerError, reason: "internal"))
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
