import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheFetch

/// Issue 36: freshness by RFC 9111 for a shared cache, as known answers.
/// `now` is fixed; every header is given relative to it.
@Suite("HTTPCachePolicy (RFC 9111)")
struct HTTPCachePolicyTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)
    static func at(_ offset: TimeInterval) -> String { HTTPDate.format(now.addingTimeInterval(offset)) }
    static let day: TimeInterval = 86400

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let headers: [String: String]
        var heuristics = HTTPCachePolicy.Heuristics()
        /// The freshness lifetime (RFC 9111 §4.2.1).
        let lifetime: TimeInterval
        /// Seconds from `now` to the expiry (negative: already stale).
        let expiresIn: TimeInterval
        var noStore = false
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        // Age
        Case(name: "max-age=60 with Age: 58 is fresh for 2 s", headers: ["cache-control": "max-age=60", "age": "58"],
             lifetime: 60, expiresIn: 2),
        Case(name: "Age past max-age: stale by the difference", headers: ["cache-control": "max-age=60", "age": "100"],
             lifetime: 60, expiresIn: -40),
        Case(name: "an Age that is not delta-seconds counts as 0", headers: ["cache-control": "max-age=60", "age": "-5"],
             lifetime: 60, expiresIn: 60),
        Case(name: "Age counts against Expires too", headers: ["date": at(0), "expires": at(600), "age": "100"],
             lifetime: 600, expiresIn: 500),
        // Date / Expires
        Case(name: "Expires is read against Date: an origin clock an hour behind",
             headers: ["date": at(-3600), "expires": at(-3000)], lifetime: 600, expiresIn: 600),
        Case(name: "Expires is read against Date: an origin clock an hour ahead",
             headers: ["date": at(3600), "expires": at(4200)], lifetime: 600, expiresIn: 600),
        Case(name: "Expires without Date: against the time received", headers: ["expires": at(300)],
             lifetime: 300, expiresIn: 300),
        Case(name: "Expires before Date: already stale", headers: ["date": at(0), "expires": at(-60)],
             lifetime: 0, expiresIn: 0),
        Case(name: "Expires: 0 (unparseable): already stale", headers: ["expires": "0"], lifetime: 0, expiresIn: 0),
        Case(name: "max-age wins over Expires", headers: ["cache-control": "max-age=60", "date": at(0), "expires": at(600)],
             lifetime: 60, expiresIn: 60),
        // s-maxage (a shared cache)
        Case(name: "s-maxage wins over max-age", headers: ["cache-control": "max-age=60, s-maxage=300"],
             lifetime: 300, expiresIn: 300),
        Case(name: "s-maxage wins whatever the order", headers: ["cache-control": "s-maxage=10, max-age=600"],
             lifetime: 10, expiresIn: 10),
        Case(name: "s-maxage wins over Expires", headers: ["cache-control": "s-maxage=30", "expires": at(600)],
             lifetime: 30, expiresIn: 30),
        Case(name: "an s-maxage that is not delta-seconds: stale", headers: ["cache-control": "s-maxage=1.5, max-age=60"],
             lifetime: 0, expiresIn: 0),
        // private / no-store: not stored for sharing
        Case(name: "private is not stored", headers: ["cache-control": "private, max-age=60"],
             lifetime: 60, expiresIn: 60, noStore: true),
        Case(name: "no-store is not stored", headers: ["cache-control": "no-store"],
             lifetime: day, expiresIn: day, noStore: true),
        Case(name: "private=\"set-cookie\" names a field only: stored", headers: ["cache-control": "private=\"set-cookie\", max-age=60"],
             lifetime: 60, expiresIn: 60),
        Case(name: "no-cache: stored, stale at once", headers: ["cache-control": "no-cache, max-age=600"],
             lifetime: 0, expiresIn: 0),
        // Heuristic freshness (RFC 9111 §4.2.2)
        Case(name: "no Cache-Control, no Expires: 10% of the time since Last-Modified",
             headers: ["date": at(0), "last-modified": at(-10 * day)], heuristics: .init(max: 7 * day, defaultTTL: 60),
             lifetime: day, expiresIn: day),
        Case(name: "heuristic capped by heuristic_max", headers: ["date": at(0), "last-modified": at(-100 * day)],
             heuristics: .init(max: 2 * day, defaultTTL: 60), lifetime: 2 * day, expiresIn: 2 * day),
        Case(name: "heuristic measured from Date, not the local clock",
             headers: ["date": at(-3600), "last-modified": at(-3600 - 10_000)], lifetime: 1000, expiresIn: 1000),
        Case(name: "heuristic without Date: from the time received", headers: ["last-modified": at(-5000)],
             lifetime: 500, expiresIn: 500),
        Case(name: "heuristic with Age", headers: ["last-modified": at(-5000), "age": "200"], lifetime: 500, expiresIn: 300),
        Case(name: "Cache-Control without a lifetime: heuristic", headers: ["cache-control": "public", "last-modified": at(-5000)],
             lifetime: 500, expiresIn: 500),
        Case(name: "Last-Modified in the future: 0", headers: ["date": at(0), "last-modified": at(600)], lifetime: 0, expiresIn: 0),
        Case(name: "no Last-Modified either: default_ttl", headers: [:], heuristics: .init(max: 7 * day, defaultTTL: 3600),
             lifetime: 3600, expiresIn: 3600),
        Case(name: "default_ttl 0: stale at once", headers: ["etag": "\"a\""], heuristics: .init(max: day, defaultTTL: 0),
             lifetime: 0, expiresIn: 0),
        Case(name: "an unparseable Last-Modified: default_ttl", headers: ["last-modified": "yesterday"],
             heuristics: .init(max: day, defaultTTL: 120), lifetime: 120, expiresIn: 120),
        Case(name: "Expires present: no heuristic", headers: ["expires": at(60), "last-modified": at(-100 * day)],
             lifetime: 60, expiresIn: 60),
    ]

    @Test(arguments: cases)
    func freshnessLifetime(_ c: Case) {
        let policy = HTTPCachePolicy(headers: c.headers, now: Self.now, heuristics: c.heuristics)
        #expect(policy.lifetime == c.lifetime)
        #expect(policy.expiresAt == Self.now.addingTimeInterval(c.expiresIn))
        #expect(policy.noStore == c.noStore)
        // Never fresh for ever: every response gets an expiry.
        #expect(policy.validators(c.headers).expiresAt != nil)
        #expect(policy.validators(c.headers).freshFor == c.lifetime)
    }

    /// A 404's own headers: how long it may be remembered (the pipeline caps it by negative_ttl).
    @Test(arguments: [
        ([:], nil),
        (["cache-control": "max-age=60"], 60),
        (["cache-control": "max-age=60", "age": "20"], 40),
        (["cache-control": "max-age=60", "age": "90"], 0),
        (["cache-control": "max-age=0"], 0),
        (["cache-control": "no-store"], 0),
        (["cache-control": "private, max-age=60"], 0),
        (["cache-control": "no-cache"], 0),
        (["expires": at(300)], 300),
        (["cache-control": "public"], nil),
    ] as [([String: String], TimeInterval?)])
    func negativeLifetime(_ headers: [String: String], expected: TimeInterval?) {
        #expect(HTTPCachePolicy.negativeLifetime(headers, now: Self.now) == expected)
    }

    /// A 304: its own lifetime and Age when it gives one; else the stored
    /// lifetime from now; a row stored without one gets the heuristic.
    @Test func notModifiedRenewsTheLifetime() {
        let stored = HTTPValidators(etag: "\"a\"", lastModified: Self.at(-10 * Self.day), freshFor: 600)
        let restated = HTTPCachePolicy.afterNotModified(["cache-control": "max-age=60", "age": "30"], stored: stored, now: Self.now)
        #expect(restated.expiresAt == Self.now.addingTimeInterval(30) && restated.freshFor == 60)
        let bare = HTTPCachePolicy.afterNotModified(["etag": "\"a\""], stored: stored, now: Self.now)
        #expect(bare.expiresAt == Self.now.addingTimeInterval(600) && bare.freshFor == 600)
        var legacy = stored
        legacy.freshFor = nil
        let dated = HTTPCachePolicy.afterNotModified([:], stored: legacy, now: Self.now,
                                                     heuristics: .init(max: 7 * Self.day, defaultTTL: 60))
        #expect(dated.freshFor == Self.day && dated.expiresAt == Self.now.addingTimeInterval(Self.day))
        let noStore = HTTPCachePolicy.afterNotModified(["cache-control": "no-store"], stored: stored, now: Self.now)
        #expect(noStore.expiresAt == Self.now, "a 304 saying no-store is not fresh for ever")
    }
}
