import ArtCacheCore
import Foundation

/// What an operator's endpoint answered (``Downloader/endpoint(_:priority:)``).
package struct EndpointAnswer: Sendable {
    package let status: Int
    /// Lowercased names.
    package let headers: [String: String]
    package let body: Data
}

/// One request to an endpoint the operator configured: the ring's front door
/// (`[service] front_url`, `prefetch --via`), the second tier's object
/// store (`[tier2] endpoint`), or a service's `/health` (`health --url`).
package struct EndpointRequest: Sendable {
    package var url: String
    /// GET, HEAD, PUT, DELETE...
    package var method = "GET"
    package var accept: String? = nil
    /// `Name: value` lines.
    package var headers: [String] = []
    package var body: Data? = nil
    /// The deadline, connecting included.
    package var timeout: TimeInterval
    package var maxBody: Int64 = 64 << 20
    /// Signed by libcurl (SigV4, `CURLOPT_AWS_SIGV4`): region, service, access key, secret key.
    package var sigV4: (region: String, service: String, accessKey: String, secretKey: String)? = nil
    /// The addresses (IPv4 or IPv6) to connect to for the URL's host, in
    /// place of the resolver's; empty: the resolver's. Either way libcurl
    /// tries them in turn within the one deadline (CURLOPT_RESOLVE; tests
    /// give a host several addresses with it). The entry stays in the
    /// downloader's DNS cache: its later requests to the same host and port
    /// see these addresses too (`health --url` has a downloader of its own).
    package var addresses: [String] = []

    package init(url: String, method: String = "GET", timeout: TimeInterval) {
        self.url = url
        self.method = method
        self.timeout = timeout
    }
}

extension Downloader {
    /// GETs `url` on the operator's endpoint; see ``endpoint(_:priority:)``.
    package func getEndpoint(_ url: String, accept: String?, timeout: TimeInterval, maxBody: Int64 = 64 << 20,
                             priority: PriorityHandle) async throws(DownloadError) -> EndpointAnswer {
        var request = EndpointRequest(url: url, timeout: timeout)
        request.accept = accept
        request.maxBody = maxBody
        return try await endpoint(request, priority: priority)
    }

    /// One request to an endpoint the operator configured, not an origin, so
    /// the origin rules do not apply: no address policy (the endpoint may be
    /// on loopback or a private network), no `allowed_sources`, no redirect
    /// followed, no retry, retry queue, negative answer or host breaker (a
    /// caller keeps its own). It shares the transport (one libcurl multi
    /// handle and its total and per-host limits) and keeps a deadline
    /// (`timeout`, connecting included; the download low-speed rule never
    /// cuts it shorter) and a body limit (`maxBody`). Any
    /// status comes back; a transfer that fails throws, typed.
    package func endpoint(_ endpoint: EndpointRequest, priority: PriorityHandle) async throws(DownloadError) -> EndpointAnswer {
        let url = endpoint.url
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty else {
            throw DownloadError(.invalidURL, "\(url): not an http or https URL")
        }
        var settings = self.settings
        settings.timeout = endpoint.timeout
        settings.connectTimeout = min(settings.connectTimeout, endpoint.timeout)
        // The deadline decides, not the origins' stall rule: a node holds a
        // request at admission and sends nothing until its render is done,
        // so a warm-up through the front may be silent for most of its
        // `timeout` (and a trickle is still cut by that deadline).
        settings.lowSpeedTime = max(settings.lowSpeedTime, endpoint.timeout)
        settings.maxBodyBytes = endpoint.maxBody
        settings.maxRedirects = 0
        settings.allowHTTP = true
        let authority = host.lowercased() + (components.port.map { ":\($0)" } ?? "")
        let bracketed = { (name: String) in name.contains(":") && !name.hasPrefix("[") ? "[\(name)]" : name }
        var request = TransferRequest(url: url, host: authority, ifNoneMatch: nil, ifModifiedSince: nil, settings: settings,
                                      accept: endpoint.accept, extraHeaders: endpoint.headers, trusted: true)
        request.method = endpoint.method == "GET" ? nil : endpoint.method
        request.body = endpoint.body
        if !endpoint.addresses.isEmpty {
            let port = components.port ?? (scheme == "https" ? 443 : 80)
            request.resolve = "\(bracketed(host)):\(port):" + endpoint.addresses.map(bracketed).joined(separator: ",")
        }
        if let sign = endpoint.sigV4 {
            request.awsSigV4 = "aws:amz:\(sign.region):\(sign.service)"
            request.credentials = sign.accessKey + ":" + sign.secretKey
        }
        let result = try await perform(request, priority: priority)
        return EndpointAnswer(status: result.status, headers: result.headers, body: result.body)
    }
}
