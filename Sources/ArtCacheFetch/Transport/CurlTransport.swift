import ArtCacheCore
import CCurlShim
import Foundation

/// One HTTP GET as the transport sees it.
struct TransferRequest: Sendable {
    var url: String
    var host: String
    var ifNoneMatch: String?
    var ifModifiedSince: String?
    var settings: DownloadSettings
    /// `Accept` sent (nil: the image Accept every origin gets).
    var accept: String? = nil
    /// More request header lines (`Name: value`).
    var extraHeaders: [String] = []
    /// An endpoint the operator configured, not an origin
    /// (``Downloader/getEndpoint(_:accept:timeout:maxBody:priority:)``): its
    /// connections are not checked against the address policy.
    var trusted = false
    /// nil: GET.
    var method: String? = nil
    /// A request body (sent with `method`, e.g. PUT).
    var body: Data? = nil
    /// libcurl's SigV4 signing (`aws:amz:REGION:SERVICE`) with `credentials` (`ACCESS:SECRET`).
    var awsSigV4: String? = nil
    var credentials: String? = nil
    /// One CURLOPT_RESOLVE entry (`HOST:PORT:ADDR,ADDR`): the addresses
    /// tried in place of the resolver's (an operator's endpoint only).
    var resolve: String? = nil
}

/// What libcurl reported for one finished transfer.
struct TransferResult: Sendable {
    var curlCode: Int32
    var curlMessage: String
    var status: Int
    /// Headers of the last response in a redirect chain; lowercased names.
    var headers: [String: String]
    var body: Data
    var effectiveURL: String
    var httpVersion: Int
    var redirects: Int
    /// The body passed `max_body_size` while streaming and was aborted.
    var tooLarge: Bool
    /// A connection (first or a redirect hop) went to an address the policy refuses.
    var blockedAddress: IPAddress? = nil
    /// A redirect pointed at a host `allowed_sources` refuses (not followed).
    var blockedSource: String? = nil
    /// A redirect libcurl could not have followed (refused before it tried).
    var unfollowableRedirect: UnfollowableRedirect? = nil
    /// The last hop's request went out: a timeout after it is the origin's
    /// slowness; without it the connection never came up.
    var requestSent = false
    /// The system's error number of the last socket call that failed
    /// (`ECONNREFUSED`...; libcurl's `CURLINFO_OS_ERRNO`), 0 when none.
    var osErrno: Int32 = 0
}

/// One transfer under way: its URL, when it started, the body bytes received so far.
package struct TransferProgress: Sendable, Equatable {
    package var url: String
    package var started: ContinuousClock.Instant
    package var bytes: Int64

    package init(url: String, started: ContinuousClock.Instant, bytes: Int64) {
        self.url = url
        self.started = started
        self.bytes = bytes
    }
}

/// libcurl's multi interface driven from one dedicated thread, bridged to
/// async/await. Transfers are admitted under a total and a per-host limit;
/// connections (keep-alive, HTTP/2 multiplexing) are reused across transfers.
final class CurlTransport: Sendable {
    private let engine: CurlEngine

    init(maxTotal: Int, maxPerHost: Int) throws(DownloadError) {
        guard ccurl_global_init() == 0 else { throw DownloadError(.network, "curl_global_init failed") }
        guard let multi = ccurl_multi_create(maxTotal, maxPerHost) else {
            throw DownloadError(.network, "cannot create a libcurl multi handle")
        }
        engine = CurlEngine(multi: multi, maxTotal: maxTotal, maxPerHost: maxPerHost)
        let engine = self.engine
        let thread = Thread { engine.run() }
        thread.name = "artcache.curl"
        thread.start()
    }

    deinit { engine.shutdown() }

    /// Runs one transfer, admitted by `priority` (which may change while it
    /// waits). Cancelling the calling task aborts it, at any point.
    func perform(_ request: TransferRequest, priority: PriorityHandle) async throws -> TransferResult {
        let id = engine.nextID()
        let engine = self.engine
        return try await priority.whileObserving({ engine.reprioritize(id: id, to: $0) }) {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    engine.submit(id: id, request: request, priority: priority.value, background: priority.background,
                                  continuation: continuation)
                }
            } onCancel: {
                engine.cancel(id: id)
            }
        }
    }

    /// Stops the transport thread; transfers under way or waiting fail as cancelled.
    func shutdown() { engine.shutdown() }

    /// Transfers submitted and not yet started, and transfers under way.
    var load: (queued: Int, active: Int) { engine.load.withLock { ($0.queued, $0.active) } }

    /// The transfers under way (as of at most ``CurlEngine/underWayEvery`` ago).
    var underWay: [TransferProgress] { engine.underWay.withLock { $0 } }

    /// Returns once the transfers waiting and under way satisfy `predicate`.
    func waitForLoad(until predicate: @escaping @Sendable ((queued: Int, active: Int)) -> Bool) async {
        await engine.load.wait(until: predicate)
    }
}
