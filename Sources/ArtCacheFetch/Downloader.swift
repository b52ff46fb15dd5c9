import ArtCacheCore
import Foundation
import Logging

/// An HTTP response as the downloader hands it over.
package struct HTTPResponse: Sendable {
    package var status: Int
    /// Lowercased header names.
    package var headers: [String: String]
    package var body: Data
    package var effectiveURL: String
    package var httpVersion: Int
    package var attempts: Int
}

/// Downloads over libcurl (see `CurlTransport`) with the `[download]` limits,
/// and retries network errors, 5xx and 429 with exponential backoff and jitter.
package final class Downloader: Sendable {
    package let settings: DownloadSettings
    let transport: CurlTransport
    let logger: Logger
    /// Per-host offline state for this downloader's life (see ``HostBreaker``).
    let breaker: HostBreaker

    package init(settings: DownloadSettings, logger: Logger = Logger(label: "artcache.download")) throws {
        self.settings = settings
        self.logger = logger
        transport = try CurlTransport(maxTotal: settings.concurrency, maxPerHost: settings.perHost)
        breaker = HostBreaker(threshold: settings.offlineAfter, coolDown: settings.offlineRetryAfter)
    }

    /// GETs `url`. With `validators`, sends If-None-Match / If-Modified-Since,
    /// and a 304 comes back as a response with status 304.
    package func fetch(_ url: String, validators: HTTPValidators? = nil,
                      priority: ImagePriority = .normal) async throws(DownloadError) -> HTTPResponse {
        try await fetch(url, validators: validators, priority: PriorityHandle(priority))
    }

    /// Stops the transport thread (the pipeline's `close()` calls this).
    package func shutdown() { transport.shutdown() }

    /// Downloads waiting for admission and under way.
    package var activity: (queued: Int, active: Int) { transport.load }

    /// The downloads under way, with their bytes so far (progress output;
    /// as of at most a quarter of a second ago).
    package var underWay: [TransferProgress] { transport.underWay }

    /// Returns once the downloads waiting and under way satisfy `predicate` (tests, no polling).
    package func waitForActivity(until predicate: @escaping @Sendable ((queued: Int, active: Int)) -> Bool) async {
        await transport.waitForLoad(until: predicate)
    }

    package func fetch(_ url: String, validators: HTTPValidators?, priority: PriorityHandle) async throws(DownloadError) -> HTTPResponse {
        let normalized: NormalizedURL
        do {
            normalized = try NormalizedURL(url)
        } catch {
            throw DownloadError(.invalidURL, error.message)
        }
        if let refusal = settings.refusal(of: normalized, as: url) { throw refusal }
        let request = TransferRequest(url: normalized.string, host: normalized.host,
                                      ifNoneMatch: HTTPValidators.replayable(validators?.etag),
                                      ifModifiedSince: HTTPValidators.replayable(validators?.lastModified),
                                      settings: settings)
        var attempt = 0
        while true {
            attempt += 1
            guard let pass = breaker.admit(normalized.authority) else { throw offline(url, normalized.authority) }
            do {
                let response = try await once(request, attempt: attempt, priority: priority)
                breaker.recordAnswer(host: normalized.authority)
                return response
            } catch let error where error.isRetryable && attempt <= settings.retries {
                // Every outcome, the probe's too: failed, reached, or its slot given back.
                breaker.record(error, host: normalized.authority, pass: pass)
                // Offline now: no backoff for a host that is not there.
                if breaker.isOpen(normalized.authority) { throw offline(url, normalized.authority, after: error, tries: attempt) }
                let delay = backoff(attempt: attempt, retryAfter: error.retryAfter)
                logger.debug("retrying", metadata: ["url": "\(url)", "reason": "\(error.reason)", "delay": "\(delay)"])
                do {
                    try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
                } catch {
                    throw DownloadError(.cancelled, "\(url): cancelled")
                }
            } catch {
                breaker.record(error, host: normalized.authority, pass: pass)
                // Its last failure took the host offline: said with the cause and the tries.
                if error.hostUnreachable, breaker.offlineCause(normalized.authority) != nil {
                    throw offline(url, normalized.authority, after: error, tries: attempt)
                }
                // Tried more than once: the message says how often.
                throw attempt > 1 ? error.with(message: "\(error.message) (\(attempt) tries)") : error
            }
        }
    }

    /// The refusal of a URL whose host's breaker is open: not tried, and why the host is offline.
    private func offline(_ url: String, _ authority: String) -> DownloadError {
        let why = breaker.offlineCause(authority).map { "\($0.cause), \($0.failures) times in a row" }
            ?? "\(settings.offlineAfter) network failures in a row"
        return DownloadError(.hostOffline, "\(url): not tried: \(authority) is offline (\(why)); kept for `prefetch --retry`")
    }

    /// A URL tried `tries` times, whose last failure (`error`) left its host
    /// offline: the cause and the tries, and for how long the host is not tried.
    private func offline(_ url: String, _ authority: String, after error: DownloadError, tries: Int) -> DownloadError {
        var offline = DownloadError(.hostOffline, "\(url): \(authority): \(error.shortCause(url: url)) "
                                    + "(\(tries) \(tries == 1 ? "try" : "tries")); host offline for \(Self.seconds(breaker.coolDown))")
        offline.cause = error.cause
        return offline
    }

    /// `30 s`, `0.5 s`.
    static func seconds(_ interval: TimeInterval) -> String {
        interval == interval.rounded() ? "\(Int(interval)) s" : "\(interval) s"
    }

    private func once(_ request: TransferRequest, attempt: Int, priority: PriorityHandle) async throws(DownloadError) -> HTTPResponse {
        let result = try await perform(request, priority: priority)
        if result.status == 304 || (200..<300).contains(result.status) {
            return HTTPResponse(status: result.status, headers: result.headers, body: result.body,
                                effectiveURL: result.effectiveURL, httpVersion: result.httpVersion, attempts: attempt)
        }
        if (300..<400).contains(result.status) {
            throw DownloadError(.tooManyRedirects, "\(request.url): redirect (\(result.status)) not followed",
                                status: result.status)
        }
        var error = DownloadError(.httpStatus, "\(request.url): HTTP status \(result.status)", status: result.status,
                                  retryAfter: HTTPCachePolicy.retryAfter(result.headers["retry-after"]))
        if result.status == 404 || result.status == 410 { error.freshFor = HTTPCachePolicy.negativeLifetime(result.headers) }
        throw error
    }

    /// One transfer through the transport; a failed one (curl's error, a
    /// refusal, cancellation) is thrown typed, any HTTP status comes back.
    func perform(_ request: TransferRequest, priority: PriorityHandle) async throws(DownloadError) -> TransferResult {
        if Task.isCancelled { throw DownloadError(.cancelled, "\(request.url): cancelled") }
        let result: TransferResult
        do {
            result = try await transport.perform(request, priority: priority)
        } catch let error as DownloadError {
            throw error
        } catch {
            throw DownloadError(.cancelled, "\(request.url): cancelled")
        }
        guard result.curlCode == 0 else { throw DownloadError.fromCurl(result, url: request.url, settings: request.settings) }
        return result
    }

    /// Full-jitter exponential backoff; an origin's Retry-After wins, capped
    /// at `retry_max_delay`.
    func backoff(attempt: Int, retryAfter: TimeInterval?) -> TimeInterval {
        if let retryAfter { return min(retryAfter, settings.retryMaxDelay) }
        let ceiling = min(settings.retryMaxDelay, settings.retryBaseDelay * pow(2, Double(attempt - 1)))
        return Double.random(in: ceiling / 2...max(ceiling / 2, ceiling))
    }
}
