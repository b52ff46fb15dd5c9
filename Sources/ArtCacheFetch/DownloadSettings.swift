import ArtCacheCore
import Foundation

/// `[download]`: how the downloader talks to origins. `DownloadSettings()`
/// holds the documented defaults of `cache.conf` (the configuration table
/// reads them from here).
public struct DownloadSettings: Sendable, Equatable {
    /// Transfers at once, in total.
    public var concurrency = 32
    /// Transfers at once per host.
    public var perHost = 8
    public var connectTimeout: TimeInterval = 10
    public var timeout: TimeInterval = 60
    /// Bytes per second below which, for `lowSpeedTime`, a transfer is aborted.
    public var lowSpeedLimit: Int64 = 1024
    public var lowSpeedTime: TimeInterval = 20
    public var maxRedirects = 5
    public var maxBodyBytes: Int64 = 25_000_000
    public var userAgent = "artcache/0.1 (+https://github.com/artcache/artcache)"
    public var allowHTTP = true
    public var retries = 3
    public var retryBaseDelay: TimeInterval = 0.5
    public var retryMaxDelay: TimeInterval = 30
    /// URLs kept in the persistent retry queue; the oldest failures go first.
    public var retryQueueMax = 10_000
    /// A URL the origin answered 404 or 410 for, or whose body is not an
    /// image, fails at once for this long, without asking the origin again
    /// (`[download] negative_ttl`; kept in the index, seen by every process). 0: off.
    public var negativeTTL: TimeInterval = 600
    /// Negative answers kept at most (`[download] negative_max`); past it
    /// the oldest go first, as in the retry queue.
    public var negativeMax = 100_000
    /// Transfers that may wait for one host; more fail at once (`queue_full`).
    public var queuePerHost = 10_000
    /// Network failures (DNS, connect, connect timeout) in a row after which
    /// a host counts as offline for this run: its other URLs go straight to
    /// the retry queue (`host_offline`) until the breaker's cool-down lets
    /// one try again.
    public var offlineAfter = 3
    /// How long an offline host's URLs are not tried; then one goes through
    /// (and its answer closes the breaker, its failure reopens it).
    public var offlineRetryAfter: TimeInterval = 30
    /// Non-public networks origins may be fetched from anyway (CIDR), e.g.
    /// `127.0.0.1/32` for a local origin. Everything else that is not a public
    /// address is refused at connect time (`blocked_address`).
    public var allowedNetworks: [IPNetwork] = []
    /// Hosts sources may come from (`example.com`, `*.example.com`); empty:
    /// any public host. Checked on the URL and on every redirect hop.
    public var allowedSources: [HostPattern] = []

    /// The documented defaults of `cache.conf`; set the fields to change them.
    public init() {}

    /// Where connections may go under these settings.
    package var addressPolicy: AddressPolicy { AddressPolicy(allowedNetworks: allowedNetworks) }
    /// Which hosts sources may come from under these settings.
    package var sourcePolicy: SourcePolicy { SourcePolicy(patterns: allowedSources) }

    /// The refusal these settings give `url` before any connection: plain
    /// http when `allow_http` is off, a host outside `allowed_sources`; nil
    /// when only a download can tell (the downloader and manifests both ask).
    package func refusal(of url: NormalizedURL, as given: String) -> DownloadError? {
        if url.scheme == "http", !allowHTTP {
            return DownloadError(.refusedScheme, "\(given): plain http is refused by configuration (download.allow_http = false)")
        }
        guard sourcePolicy.allows(host: url.host) else {
            return DownloadError(.blockedSource, "\(given): refused: host \(url.host) is not in download.allowed_sources")
        }
        return nil
    }

    /// The reason these settings refuse `url` before any connection
    /// (`refused_scheme`, `blocked_source`, or `blocked_address` for an
    /// address literal outside the allowed networks); nil when only a
    /// download can tell (a manifest marks such items failed at once).
    package func refusalReason(of url: NormalizedURL) -> String? {
        if let refusal = refusal(of: url, as: url.string) { return refusal.reason }
        let literal = url.host.hasPrefix("[") ? String(url.host.dropFirst().dropLast()) : url.host
        if let address = IPAddress(literal), !addressPolicy.allows(address) {
            return ArtCacheError.NetworkReason.blockedAddress.rawValue
        }
        return nil
    }
}
