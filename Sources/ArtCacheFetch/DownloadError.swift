import ArtCacheCore
import Foundation

/// Why a download failed: a stable code, a human message, and for HTTP
/// errors the status.
package struct DownloadError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Code: String, Sendable, Codable {
        case dns
        case connect
        /// `connect_timeout` or `timeout` ran out (or the low-speed limit
        /// hit). Before the connection was made it is a host that is not
        /// there (see `timedOutConnecting`), after it a slow origin.
        case timeout
        case tls
        /// The connection broke or the body ended short of its Content-Length.
        case network
        case truncated
        case tooLarge = "too_large"
        case tooManyRedirects = "too_many_redirects"
        case httpStatus = "http_status"
        /// The scheme is not allowed (plain http refused by config, or not http/https).
        case refusedScheme = "refused_scheme"
        /// The source (or a redirect hop) resolves to an address that is not
        /// public and not in `[download] allowed_networks`: never connected to.
        case blockedAddress = "blocked_address"
        /// The source's host (or a redirect's) is not in `[download] allowed_sources`.
        case blockedSource = "blocked_source"
        case invalidURL = "invalid_url"
        case cancelled
        /// The host failed at the network level (DNS, connect, connect
        /// timeout) again and again in this run: its breaker is open, so the
        /// URL was not tried (it goes to the retry queue). A later success
        /// closes the breaker.
        case hostOffline = "host_offline"
        /// `[download] queue_per_host` transfers already wait for this host.
        case queueFull = "queue_full"
    }

    package let code: Code
    package let message: String
    package var status: Int?
    /// Seconds the origin asked us to wait (429/503 Retry-After).
    package var retryAfter: TimeInterval?
    /// A `timeout` that ran out before the connection was made (libcurl's
    /// connect phase: DNS, TCP, TLS; a black-holed host). Still reported as
    /// `timeout`, the way `connect_timeout` names it; the host breaker
    /// counts it like a refused connect.
    package var timedOutConnecting = false
    /// For a 404 or 410: how long its own Cache-Control / Expires let it be
    /// remembered (0: not at all); nil when they say nothing.
    package var freshFor: TimeInterval?

    /// What went wrong in a few words, without the URL (`connection
    /// refused`, `cannot resolve host`): what a message about repeated
    /// failures names. Nil: the message's own text after the URL.
    package var cause: String?

    package init(_ code: Code, _ message: String, status: Int? = nil, retryAfter: TimeInterval? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.retryAfter = retryAfter
    }

    /// This error with another message (code, status and the rest kept).
    package func with(message: String) -> DownloadError {
        var copy = DownloadError(code, message, status: status, retryAfter: retryAfter)
        copy.timedOutConnecting = timedOutConnecting
        copy.freshFor = freshFor
        copy.cause = cause
        return copy
    }

    /// ``cause``, or what the message says after `URL: `.
    package func shortCause(url: String) -> String {
        if let cause { return cause }
        return message.hasPrefix(url + ": ") ? String(message.dropFirst(url.count + 2)) : message
    }

    package var description: String { message }

    /// The key under which failures are counted: `dns`, `timeout`, `http_404`, ...
    package var reason: String {
        if code == .httpStatus, let status { return "http_\(status)" }
        return code.rawValue
    }

    /// The host was not reached at all: DNS, connect, or a timeout before
    /// the connection was made. What the host breaker counts toward offline.
    package var hostUnreachable: Bool {
        code == .dns || code == .connect || (code == .timeout && timedOutConnecting)
    }

    /// The attempt reached its host: an answer (any HTTP status, a redirect
    /// not followed), or a failure after the connection was made — a
    /// timeout after the request went out, TLS (the host took the
    /// connection), a broken, short or too large body. The host breaker
    /// closes on it: the host is there (issue 58).
    package var reachedHost: Bool {
        if status != nil { return true }
        switch code {
        case .timeout: return !timedOutConnecting
        case .tls, .network, .truncated, .tooLarge, .tooManyRedirects, .httpStatus: return true
        default: return false
        }
    }

    /// Caused by the network rather than by the origin's answer: such URLs go
    /// to the persistent retry queue.
    package var isNetworkFailure: Bool {
        switch code {
        case .dns, .connect, .timeout, .tls, .network, .truncated, .hostOffline, .queueFull: true
        default: false
        }
    }

    /// A `timeout` after the request went out: the origin answers, too
    /// slowly (`low_speed_time` below `low_speed_limit`, or the
    /// whole-transfer `timeout`).
    package var isSlowOrigin: Bool { code == .timeout && !timedOutConnecting }

    /// Worth another attempt now: network failures, 5xx and 429. Never other
    /// 4xx, and not a host whose breaker is open or whose queue is full, nor
    /// an origin too slow to finish (each attempt would cost another
    /// `low_speed_time` or `timeout`, holding its result set up): those go
    /// to the retry queue for a later run.
    package var isRetryable: Bool {
        if code == .hostOffline || code == .queueFull || isSlowOrigin { return false }
        if isNetworkFailure { return true }
        if code == .httpStatus, let status { return status >= 500 || status == 429 }
        return false
    }

    /// Maps a finished libcurl transfer that failed at the transport level.
    static func fromCurl(_ result: TransferResult, url: String, settings: DownloadSettings) -> DownloadError {
        let detail = result.curlMessage
        if let host = result.blockedSource {
            return DownloadError(.blockedSource, "\(url): refused: a redirect goes to host \(host), not in download.allowed_sources")
        }
        if let redirect = result.unfollowableRedirect {
            // libcurl would have refused it too (CURLE_UNSUPPORTED_PROTOCOL / CURLE_URL_MALFORMAT).
            if redirect.unsupportedScheme {
                return DownloadError(.refusedScheme, "\(url): refused: a redirect goes to \(redirect.location.debugDescription), "
                                     + "a scheme that is not followed (\(redirect.reason))")
            }
            return DownloadError(.invalidURL, "\(url): refused: a redirect's Location \(redirect.location.debugDescription) "
                                 + "is not a URL libcurl can follow (\(redirect.reason))")
        }
        if let blocked = result.blockedAddress {
            return DownloadError(.blockedAddress, "\(url): refused: the source resolves to a \(AddressClass.of(blocked).rawValue) "
                                 + "address (\(blocked)), not allowed by download.allowed_networks")
        }
        switch result.curlCode {
        case 1: return DownloadError(.refusedScheme, "\(url): scheme not allowed (\(settings.allowHTTP ? "http and https only" : "https only")): \(detail)")
        case 3: return DownloadError(.invalidURL, "\(url): malformed URL: \(detail)")
        case 5, 6:
            var error = DownloadError(.dns, "\(url): cannot resolve host: \(detail)")
            error.cause = "cannot resolve host"
            return error
        case 7:
            var error = DownloadError(.connect, "\(url): cannot connect: \(detail)")
            error.cause = result.osErrno != 0 ? Self.systemReason(result.osErrno) : "cannot connect"
            return error
        case 28 where !result.requestSent:
            // The request never went out: the connection did not come up in time.
            var error = DownloadError(.timeout, "\(url): timed out connecting: \(detail)")
            error.timedOutConnecting = true
            error.cause = "timed out connecting"
            return error
        case 28: return DownloadError(.timeout, "\(url): timed out: \(detail) (not retried in this run; kept for `prefetch --retry`)")
        case 35, 51, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91:
            return DownloadError(.tls, "\(url): TLS error: \(detail)")
        case 47: return DownloadError(.tooManyRedirects, "\(url): more than \(settings.maxRedirects) redirects")
        case 18: return DownloadError(.truncated, "\(url): body ended before its Content-Length (\(result.body.count) bytes received)")
        case 63: return DownloadError(.tooLarge, "\(url): body larger than \(Units.formatSize(settings.maxBodyBytes))")
        case 23 where result.tooLarge:
            return DownloadError(.tooLarge, "\(url): body larger than \(Units.formatSize(settings.maxBodyBytes)) (aborted while streaming)")
        case 42: return DownloadError(.cancelled, "\(url): cancelled")
        default: return DownloadError(.network, "\(url): \(detail) (curl error \(result.curlCode))")
        }
    }
}

extension DownloadError {
    /// `strerror(code)` as a clause: `connection refused`.
    static func systemReason(_ code: Int32) -> String { FileErrorText.system(code) }
}

extension ArtCacheError {
    /// A download failure in the public error's terms: by its typed code,
    /// never by its text; the download error is kept as `underlying`.
    package init(_ error: DownloadError) {
        let code: Code = switch error.code {
        case .dns: .network(.dns)
        case .connect: .network(.connect)
        case .timeout: .network(.timeout)
        case .tls: .network(.tls)
        case .network: .network(.connection)
        case .truncated: .network(.truncated)
        case .tooManyRedirects: .network(.tooManyRedirects)
        case .refusedScheme: .network(.refusedScheme)
        case .blockedAddress: .network(.blockedAddress)
        case .blockedSource: .network(.blockedSource)
        case .hostOffline: .network(.hostOffline)
        case .queueFull: .network(.queueFull)
        case .tooLarge: .tooLarge
        case .httpStatus: .httpStatus(error.status ?? 0)
        case .invalidURL: .invalidURL
        case .cancelled: .cancelled
        }
        self.init(code, error.message, underlying: error)
    }
}
