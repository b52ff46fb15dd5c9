import Foundation

/// What the response's caching headers allow: whether to store it, and until
/// when it is fresh.
struct HTTPCachePolicy: Sendable, Equatable {
    var noStore: Bool
    var expiresAt: Date?
    /// How long a response stays fresh from when it is received (nil: no expiry).
    var lifetime: TimeInterval?
    /// The headers said something about freshness (Cache-Control max-age,
    /// no-cache or no-store, or Expires). A 304 without any keeps the stored policy.
    var isExplicit: Bool

    /// Cache-Control `no-store` → not stored; `max-age=N` → fresh for N
    /// seconds; `no-cache` → stored but revalidated before each use; else
    /// `Expires`; neither → stored without expiry. A `max-age` that is not
    /// delta-seconds (`1.5`, `-1`, `inf`, `1e400`) makes the response stale,
    /// as RFC 9111 §4.2.1 advises.
    init(headers: [String: String], now: Date = Date()) {
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
    }

    /// The validators to keep after a 304: the new headers' freshness when
    /// they give one, else the stored entry's lifetime starting now (a
    /// `no-cache` entry keeps being revalidated; it never becomes fresh forever).
    static func afterNotModified(_ headers: [String: String], stored: CacheEntry, now: Date) -> HTTPValidators {
        let policy = HTTPCachePolicy(headers: headers, now: now)
        let lifetime = policy.isExplicit ? policy.lifetime : stored.freshFor
        return HTTPValidators(etag: headers["etag"], lastModified: headers["last-modified"],
                              expiresAt: lifetime.map { now.addingTimeInterval($0) }, freshFor: lifetime)
    }

    /// Seconds from a Retry-After header (delta seconds or an HTTP date);
    /// nil for anything else.
    static func retryAfter(_ value: String?, now: Date = Date()) -> TimeInterval? {
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

enum HTTPDate {
    private static let formats = ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]

    /// An HTTP-date (RFC 9110 §5.6.7: IMF-fixdate, RFC 850 or asctime form).
    /// Only short printable ASCII reaches DateFormatter: an HTTP-date is
    /// nothing else, and on Linux `date(from:)` leaks ~150 bytes whenever
    /// the text it could not parse holds a character outside the BMP.
    static func parse(_ text: String) -> Date? {
        guard text.utf8.count <= 64, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

/// A header line of a response head, as libcurl hands it over (`Name: value\r\n`).
enum HTTPHeaderLine {
    /// The lowercased name and the trimmed value, split at the first colon;
    /// nil for a line without one. The colon is found as a byte: as a
    /// Character, ":" followed by a combining mark is not ":", and the line
    /// (a `Location` included) would be skipped instead of read.
    static func field(_ line: String) -> (name: String, value: String)? {
        let bytes = line.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = Substring(bytes[..<colon]).trimmingCharacters(in: .whitespaces).lowercased()
        let value = Substring(bytes[bytes.index(after: colon)...]).trimmingCharacters(in: .whitespacesAndNewlines)
        return (name, value)
    }
}
