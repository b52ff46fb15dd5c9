import ArtCacheCore
import Foundation

/// What the response's caching headers allow a shared cache (RFC 9111):
/// whether to store it, and until when it is fresh.
///
/// | decides the freshness lifetime | when |
/// |---|---|
/// | `no-store` or `private` | not stored (artcache is a shared cache) |
/// | `no-cache` | 0: stored, revalidated before each use |
/// | `s-maxage=N` | present (it wins over `max-age`) |
/// | `max-age=N` | present |
/// | `Expires` − `Date` | present (`Date` absent: the time received) |
/// | 10% of `Date` − `Last-Modified`, at most `heuristic_max` | none of the above |
/// | `default_ttl` | none of the above, no `Last-Modified` |
///
/// The response's `Age` is taken off: a copy that spent 58 s of its
/// `max-age=60` in a CDN is fresh for 2 s more. `Date` anchors `Expires`
/// and `Last-Modified` (both are the origin's clock), so an origin whose
/// clock is off still gets the lifetime it meant; it is not used to guess
/// an age (RFC 9111's apparent age), which would turn that clock error
/// into staleness.
package struct HTTPCachePolicy: Sendable, Equatable {
    /// How long a response without an explicit freshness stays fresh
    /// (RFC 9111 §4.2.2; `[cache] heuristic_max`, `[cache] default_ttl`).
    package struct Heuristics: Sendable, Equatable {
        /// The longest heuristic lifetime from a `Last-Modified`.
        package var max: TimeInterval
        /// The lifetime of a response without `Last-Modified`.
        package var defaultTTL: TimeInterval

        package init(max: TimeInterval = 86400, defaultTTL: TimeInterval = 86400) {
            self.max = max
            self.defaultTTL = defaultTTL
        }

        /// 10% of the time from `lastModified` to `date`, at most ``max``;
        /// ``defaultTTL`` when there is no `lastModified`.
        package func lifetime(lastModified: Date?, date: Date) -> TimeInterval {
            guard let lastModified else { return defaultTTL }
            return min(max, 0.1 * Swift.max(0, date.timeIntervalSince(lastModified)))
        }
    }

    /// `no-store` or (unqualified) `private`: not kept for sharing.
    package var noStore: Bool
    /// When the response stops being fresh (may be past when its age
    /// already exceeds its lifetime).
    package var expiresAt: Date?
    /// The freshness lifetime (RFC 9111 §4.2.1), before its age is taken off.
    package var lifetime: TimeInterval?
    /// The response's `Age` when received (0 without one; RFC 9111 §5.1).
    package var age: TimeInterval
    /// The headers said something about freshness (Cache-Control max-age,
    /// s-maxage, no-cache or no-store, or Expires). A 304 without any keeps the stored policy.
    package var isExplicit: Bool
    /// `stale-while-revalidate=N` (nil when absent or not delta-seconds).
    package var staleWhileRevalidate: TimeInterval?
    /// `stale-if-error=N` (nil when absent or not delta-seconds).
    package var staleIfError: TimeInterval?
    /// `must-revalidate`, `proxy-revalidate` or `no-cache`: no stale answer, ever.
    package var mustRevalidate: Bool
    /// `immutable`.
    package var immutable: Bool

    /// The table above. `stale-while-revalidate=`, `stale-if-error=`,
    /// `must-revalidate` (or `proxy-revalidate`, `no-cache`) and
    /// `immutable` are kept for the stale rules. A `max-age` (or
    /// `s-maxage`) that is not delta-seconds (`1.5`, `-1`, `inf`, `1e400`)
    /// and an unparseable `Expires` (often `0`) make the response stale, as
    /// RFC 9111 §4.2.1 advises.
    package init(headers: [String: String], now: Date = Date(), heuristics: Heuristics = Heuristics()) {
        let directives = Self.directives(headers)
        noStore = directives.contains("no-store") || directives.contains("private")
        let date = headers["date"].flatMap(HTTPDate.parse)
        age = headers["age"].flatMap { Self.deltaSeconds($0.trimmingWhitespace()) } ?? 0
        let explicit = Self.explicitLifetime(headers, directives: directives, date: date ?? now)
        let lifetime = explicit ?? heuristics.lifetime(lastModified: headers["last-modified"].flatMap(HTTPDate.parse),
                                                        date: date ?? now)
        self.lifetime = lifetime
        expiresAt = now.addingTimeInterval(lifetime - age)
        isExplicit = noStore || explicit != nil
        staleWhileRevalidate = Self.seconds("stale-while-revalidate", in: directives)
        staleIfError = Self.seconds("stale-if-error", in: directives)
        mustRevalidate = directives.contains("must-revalidate") || directives.contains("proxy-revalidate")
            || directives.contains("no-cache")
        immutable = directives.contains("immutable")
    }

    /// A directive's value without the quotes around it (`max-age="60"`).
    private static func unquoted(_ value: Substring) -> String {
        String(value.drop { $0 == "\"" }.reversed().drop { $0 == "\"" }.reversed())
    }

    /// The Cache-Control directives, lowercased and trimmed.
    private static func directives(_ headers: [String: String]) -> [String] {
        (headers["cache-control"] ?? "").lowercased()
            .split(separator: ",").map { $0.trimmingWhitespace() }
    }

    /// The lifetime the headers give (no-cache, s-maxage, max-age, Expires
    /// against Date, in that order); nil when they give none.
    private static func explicitLifetime(_ headers: [String: String], directives: [String], date: Date) -> TimeInterval? {
        if directives.contains("no-cache") { return 0 }
        for name in ["s-maxage", "max-age"] {
            if let directive = directives.first(where: { $0.hasPrefix(name + "=") }) {
                return deltaSeconds(Self.unquoted(directive.dropFirst(name.count + 1))) ?? 0
            }
        }
        if let expires = headers["expires"] {
            return HTTPDate.parse(expires).map { max(0, $0.timeIntervalSince(date)) } ?? 0
        }
        return nil
    }

    /// How long a 404 or 410 may be remembered by its own headers: its
    /// remaining freshness; 0 under `no-store`, `private` or `no-cache`;
    /// nil when the headers say nothing (`negative_ttl` decides).
    package static func negativeLifetime(_ headers: [String: String], now: Date = Date()) -> TimeInterval? {
        let policy = HTTPCachePolicy(headers: headers, now: now)
        guard policy.isExplicit else { return nil }
        if policy.noStore { return 0 }
        return max(0, (policy.expiresAt ?? now).timeIntervalSince(now))
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
        return deltaSeconds(Self.unquoted(directive.dropFirst(name.count + 1)))
    }

    /// The validators to keep after a 304: the new headers' freshness when
    /// they give one, else the stored entry's lifetime starting now (its
    /// heuristic one when none was stored; a `no-cache` entry keeps being
    /// revalidated; it never becomes fresh forever). The 304's age counts.
    package static func afterNotModified(_ headers: [String: String], stored: HTTPValidators, now: Date,
                                         heuristics: Heuristics = Heuristics()) -> HTTPValidators {
        let policy = HTTPCachePolicy(headers: headers, now: now, heuristics: heuristics)
        let lifetime: TimeInterval
        if policy.isExplicit {
            lifetime = policy.noStore ? 0 : policy.lifetime ?? 0
        } else if let freshFor = stored.freshFor {
            lifetime = freshFor
        } else {
            let lastModified = (headers["last-modified"] ?? stored.lastModified).flatMap(HTTPDate.parse)
            lifetime = heuristics.lifetime(lastModified: lastModified, date: headers["date"].flatMap(HTTPDate.parse) ?? now)
        }
        // The stale rules come with the freshness: a 304 that restates
        // Cache-Control replaces them, one without keeps the stored ones.
        let rules = policy.isExplicit ? policy.validators(headers) : stored
        return HTTPValidators(etag: headers["etag"], lastModified: headers["last-modified"],
                              expiresAt: now.addingTimeInterval(lifetime - policy.age), freshFor: lifetime,
                              staleWhileRevalidate: rules.staleWhileRevalidate, staleIfError: rules.staleIfError,
                              mustRevalidate: rules.mustRevalidate, immutable: rules.immutable)
    }

    /// Seconds from a Retry-After header (delta seconds or an HTTP date);
    /// nil for anything else.
    package static func retryAfter(_ value: String?, now: Date = Date()) -> TimeInterval? {
        guard let value = value?.trimmingWhitespace(), !value.isEmpty else { return nil }
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
