@_spi(Benchmarks) import ArtCacheCore
import Foundation

/// What the response's caching headers allow: whether to store it, and until
/// when it is fresh.
package struct HTTPCachePolicy: Sendable, Equatable {
    package var noStore: Bool
    package var expiresAt: Date?
    /// How long a response stays fresh from when it is received (nil: no expiry).
    package var lifetime: TimeInterval?
    /// The headers said something about freshness (Cache-Control max-age,
    /// no-cache or no-store, or Expires). A 304 without any keeps the stored policy.
    package var isExplicit: Bool
    /// `stale-while-revalidate=N` (nil when absent or not delta-seconds).
    package var staleWhileRevalidate: TimeInterval?
    /// `stale-if-error=N` (nil when absent or not delta-seconds).
    package var staleIfError: TimeInterval?
    /// `must-revalidate`, `proxy-revalidate` or `no-cache`: no stale answer, ever.
    package var mustRevalidate: Bool
    /// `immutable`.
    package var immutable: Bool

    /// Cache-Control `no-store` → not stored; `max-age=N` → fresh for N
    /// seconds; `no-cache` → stored but revalidated before each use; else
    /// `Expires`; neither → stored without expiry. `stale-while-revalidate=`,
    /// `stale-if-error=`, `must-revalidate` (or `proxy-revalidate`,
    /// `no-cache`) and `immutable` are kept for the stale rules. A `max-age` that is not
    /// delta-seconds (`1.5`, `-1`, `inf`, `1e400`) makes the response stale,
    /// as RFC 9111 §4.2.1 advises.
    package init(headers: [String: String], now: Date = Date()) {
        let directives = (headers["cache-control"] ?? "").lowercased()
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        noStore = directives.contains("no-store")
        if directives.contains("no-cache") {
            expiresAt = now
        } else if let maxAge = directives.first(where: { $0.hasPrefix("max-age=") }) {
            let value = maxAge.dropFirst("max-age=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            expiresAt = Self.deltaSeconds(value).map { now.addingTimeInterval($0) } ?? now
        } else if let expires = headers["expires"] {
            // An unparseable Expires (often "0" or "-1") means already expired.
            expiresAt = HTTPDate.parse(expires) ?? now
        } else {
            expiresAt = nil
        }
        lifetime = expiresAt.map { max(0, $0.timeIntervalSince(now)) }
        isExplicit = noStore || directives.contains("no-cache") || directives.contains { $0.hasPrefix("max-age=") }
            || headers["expires"] != nil
        staleWhileRevalidate = Self.seconds("stale-while-revalidate", in: directives)
        staleIfError = Self.seconds("stale-if-error", in: directives)
        mustRevalidate = directives.contains("must-revalidate") || directives.contains("proxy-revalidate")
            || directives.contains("no-cache")
        immutable = directives.contains("immutable")
    }

    /// The validators and stale rules to store with a 2xx response.
    package func validators(_ headers: [String: String]) -> HTTPValidators {
        HTTPValidators(etag: headers["etag"], lastModified: headers["last-modified"], expiresAt: expiresAt, freshFor: lifetime,
                       staleWhileRevalidate: staleWhileRevalidate, staleIfError: staleIfError,
                       mustRevalidate: mustRevalidate, immutable: immutable)
    }

    /// `name=N` among `directives`, as delta-seconds.
    private static func seconds(_ name: String, in directives: [String]) -> TimeInterval? {
        guard let directive = directives.first(where: { $0.hasPrefix(name + "=") }) else { return nil }
        return deltaSeconds(directive.dropFirst(name.count + 1).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
    }

    /// The validators to keep after a 304: the new headers' freshness when
    /// they give one, else the stored entry's lifetime starting now (a
    /// `no-cache` entry keeps being revalidated; it never becomes fresh forever).
    package static func afterNotModified(_ headers: [String: String], stored: HTTPValidators, now: Date) -> HTTPValidators {
        let policy = HTTPCachePolicy(headers: headers, now: now)
        let lifetime = policy.isExplicit ? policy.lifetime : stored.freshFor
        // The stale rules come with the freshness: a 304 that restates
        // Cache-Control replaces them, one without keeps the stored ones.
        let rules = policy.isExplicit ? policy.validators(headers) : stored
        return HTTPValidators(etag: headers["etag"], lastModified: headers["last-modified"],
                              expiresAt: lifetime.map { now.addingTimeInterval($0) }, freshFor: lifetime,
                              staleWhileRevalidate: rules.staleWhileRevalidate, staleIfError: rules.staleIfError,
                              mustRevalidate: rules.mustRevalidate, immutable: rules.immutable)
    }

    /// Seconds from a Retry-After header (delta seconds or an HTTP date);
    /// nil for anything else.
    package static func retryAfter(_ value: String?, now: Date = Date()) -> TimeInterval? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = deltaSeconds(value) { return seconds }
        return HTTPDate.parse(value).map { max(0, $0.timeIntervalSince(now)) }
    }

    /// The largest delta-seconds value kept; larger ones mean this (RFC 9111 §1.2.2).
    static let maxDeltaSeconds = 2_147_483_648

    /// RFC 9111 delta-seconds: ASCII digits only, so never negative, fractional
    /// or non-finite (`TimeInterval("inf")`, `"nan"`, `"1e400"` and `"0x10"`
    /// all parse as Doubles); values over ``maxDeltaSeconds`` are capped.
    static func deltaSeconds(_ text: some StringProtocol) -> TimeInterval? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        var value = 0
        for digit in text.utf8 {
            value = min(value * 10 + Int(digit - UInt8(ascii: "0")), maxDeltaSeconds)
        }
        return TimeInterval(value)
    }
}
