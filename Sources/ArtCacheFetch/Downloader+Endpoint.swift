import ArtCacheCore
import Foundation

/// What an operator's endpoint answered (``Downloader/getEndpoint(_:accept:timeout:maxBody:priority:)``).
package struct EndpointAnswer: Sendable {
    package let status: Int
    /// Lowercased names.
    package let headers: [String: String]
    package let body: Data
}

extension Downloader {
    /// GETs `url` on an endpoint the operator configured — the ring's front
    /// door (`[service] front_url`, `prefetch --via`) — not on an origin, so
    /// the origin rules do not apply: no address policy (the endpoint may be
    /// on loopback or a private network), no `allowed_sources`, no redirect
    /// followed, no retry, retry queue, negative answer or host breaker. It
    /// shares the transport (one libcurl multi handle and its total and
    /// per-host limits) and keeps a deadline (`timeout`, connecting
    /// included) and a body limit (`maxBody`). Any status comes back; a
    /// transfer that fails throws, typed.
    package func getEndpoint(_ url: String, accept: String?, timeout: TimeInterval, maxBody: Int64 = 64 << 20,
                             priority: PriorityHandle) async throws(DownloadError) -> EndpointAnswer {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty else {
            throw DownloadError(.invalidURL, "\(url): not an http or https URL")
        }
        var settings = self.settings
        settings.timeout = timeout
        settings.connectTimeout = min(settings.connectTimeout, timeout)
        settings.maxBodyBytes = maxBody
        settings.maxRedirects = 0
        settings.allowHTTP = true
        let authority = host.lowercased() + (components.port.map { ":\($0)" } ?? "")
        let request = TransferRequest(url: url, host: authority, ifNoneMatch: nil, ifModifiedSince: nil, settings: settings,
                                      accept: accept, trusted: true)
        let result = try await perform(request, priority: priority)
        return EndpointAnswer(status: result.status, headers: result.headers, body: result.body)
    }
}
