import ArtCacheCore
import ArtCacheFetch
import Crypto
import Foundation

/// An S3-compatible bucket over the downloader's libcurl engine: path-style
/// URLs (`ENDPOINT/BUCKET/KEY`), requests signed by libcurl's own SigV4
/// (`CURLOPT_AWS_SIGV4`). Keys are this module's own (`[a-z0-9/]`), so
/// they need no escaping.
package struct ObjectStore: Sendable {
    package let settings: Tier2Settings
    let downloader: Downloader

    package init(settings: Tier2Settings, downloader: Downloader) {
        self.settings = settings
        self.downloader = downloader
    }

    /// Hex SHA-256 of nothing: the payload hash of a request without a body.
    static let emptyPayload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    private func request(_ method: String, _ path: String, query: String = "", timeout: TimeInterval) -> EndpointRequest {
        var request = EndpointRequest(url: settings.endpoint + "/" + settings.bucket + path + (query.isEmpty ? "" : "?" + query),
                                      method: method, timeout: timeout)
        request.accept = "*/*"
        request.sigV4 = (settings.region, "s3", settings.accessKey, settings.secretKey)
        // libcurl (7.88) signs the payload hash without sending it; S3 and
        // RGW refuse a signed request that does not carry it.
        request.headers = ["x-amz-content-sha256: " + Self.emptyPayload]
        return request
    }

    /// GET: any status comes back (404: not there).
    package func get(_ key: String, timeout: TimeInterval, maxBody: Int64, priority: PriorityHandle) async throws(DownloadError) -> EndpointAnswer {
        var get = request("GET", "/" + key, timeout: timeout)
        get.maxBody = maxBody
        return try await downloader.endpoint(get, priority: priority)
    }

    /// PUT `body` under `key`; an answer other than 2xx throws. `sha256`:
    /// the body's hex SHA-256 when known (the store checks it), else the
    /// payload is sent unsigned (no hashing here). `metadata`:
    /// `x-amz-meta-NAME` values, returned by a GET.
    package func put(_ key: String, body: Data, contentType: String, sha256: String? = nil, metadata: [String: String] = [:],
                     timeout: TimeInterval, priority: PriorityHandle) async throws(DownloadError) {
        var put = request("PUT", "/" + key, timeout: timeout)
        put.headers = ["x-amz-content-sha256: " + (sha256 ?? "UNSIGNED-PAYLOAD"), "Content-Type: " + contentType]
            + metadata.sorted { $0.key < $1.key }.map { "x-amz-meta-\($0.key): \($0.value)" }
        put.body = body
        try expect(try await downloader.endpoint(put, priority: priority).status, from: "PUT", key)
    }

    package func head(_ key: String, timeout: TimeInterval, priority: PriorityHandle) async throws(DownloadError) -> Int {
        try await headAnswer(key, timeout: timeout, priority: priority).status
    }

    /// HEAD, with the object's headers (its `x-amz-meta-*` metadata).
    package func headAnswer(_ key: String, timeout: TimeInterval, priority: PriorityHandle) async throws(DownloadError) -> EndpointAnswer {
        try await downloader.endpoint(request("HEAD", "/" + key, timeout: timeout), priority: priority)
    }

    /// Copies `key` onto itself (its bytes stay in the store, none are sent):
    /// the object's date becomes now. `contentType` and `metadata` are
    /// written again (a copy onto itself must replace them). 404: not there.
    package func touch(_ key: String, contentType: String, metadata: [String: String] = [:], timeout: TimeInterval,
                       priority: PriorityHandle) async throws(DownloadError) -> Int {
        var copy = request("PUT", "/" + key, timeout: timeout)
        copy.headers += ["x-amz-copy-source: /" + settings.bucket + "/" + key, "x-amz-metadata-directive: REPLACE",
                         "Content-Type: " + contentType]
            + metadata.sorted { $0.key < $1.key }.map { "x-amz-meta-\($0.key): \($0.value)" }
        copy.body = Data()
        let status = try await downloader.endpoint(copy, priority: priority).status
        if status == 404 { return status }
        try expect(status, from: "PUT (copy)", key)
        return status
    }

    /// Deletes up to 1,000 keys in one request (S3 `DeleteObjects`, quiet:
    /// only failures are listed); keys already gone count as deleted. A key
    /// the store could not delete throws, naming it.
    package func delete(_ keys: [String], timeout: TimeInterval, priority: PriorityHandle) async throws(DownloadError) {
        guard !keys.isEmpty else { return }
        precondition(keys.count <= 1000, "DeleteObjects takes at most 1,000 keys")
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Delete><Quiet>true</Quiet>"
        for key in keys { xml += "<Object><Key>" + Self.xmlEscaped(key) + "</Key></Object>" }
        xml += "</Delete>"
        let body = Data(xml.utf8)
        var post = request("POST", "/", query: "delete=", timeout: timeout)
        post.headers = ["x-amz-content-sha256: " + CacheKey.sha256Hex(body),
                        "Content-MD5: " + Data(Insecure.MD5.hash(data: body)).base64EncodedString(),
                        "Content-Type: application/xml"]
        post.body = body
        let answer = try await downloader.endpoint(post, priority: priority)
        try expect(answer.status, from: "POST ?delete", "\(keys.count) keys")
        let failures = try DeleteResult.failures(in: answer.body)
        if !failures.isEmpty {
            let named = failures.prefix(3).map(\.description).joined(separator: "; ") + (failures.count > 3 ? "; …" : "")
            throw DownloadError(.httpStatus, "tier2: DeleteObjects refused \(failures.count) of \(keys.count) keys: \(named)",
                                status: answer.status)
        }
    }

    /// `&`, `<`, `>` as XML entities (the keys are this module's own `[a-z0-9/]`; this is for safety).
    static func xmlEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    /// DELETE; gone already (404) is done too, any other answer but 2xx throws.
    package func delete(_ key: String, timeout: TimeInterval, priority: PriorityHandle) async throws(DownloadError) {
        let status = try await downloader.endpoint(request("DELETE", "/" + key, timeout: timeout), priority: priority).status
        try expect(status == 404 ? 204 : status, from: "DELETE", key)
    }

    private func expect(_ status: Int, from method: String, _ key: String) throws(DownloadError) {
        guard !(200..<300).contains(status) else { return }
        throw DownloadError(.httpStatus, "tier2: \(method) \(key) answered \(status)", status: status)
    }

    /// Up to 1,000 objects under `prefix`, in key order, and whether more
    /// follow (ListObjectsV2): the first page, or the one after
    /// `continuationToken` (the last page's) or after the key `startAfter`.
    /// The query is written in the canonical order SigV4 signs.
    package func list(prefix: String, startAfter: String?, continuationToken: String? = nil, timeout: TimeInterval,
                      priority: PriorityHandle) async throws(DownloadError) -> BucketListing {
        var query = continuationToken.map { "continuation-token=" + Self.escape($0) + "&" } ?? ""
        query += "list-type=2&max-keys=1000&prefix=" + Self.escape(prefix)
        if let startAfter { query += "&start-after=" + Self.escape(startAfter) }
        let answer = try await downloader.endpoint(request("GET", "/", query: query, timeout: timeout), priority: priority)
        guard answer.status == 200 else {
            throw DownloadError(.httpStatus, "\(settings.endpoint)/\(settings.bucket): listing answered \(answer.status)",
                                status: answer.status)
        }
        return try BucketListing.parse(answer.body)
    }

    /// RFC 3986 unreserved characters kept, everything else percent-encoded (as SigV4 canonicalizes).
    static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if c.isASCII, c.isLetter || c.isNumber || "-_.~".contains(c) { out.append(c) } else { out += String(format: "%%%02X", byte) }
        }
        return out
    }
}
