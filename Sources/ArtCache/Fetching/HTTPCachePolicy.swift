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
    /// `Expires`; neither → stored without expiry.
    init(headers: [String: String], now: Date = Date()) {
        let directives = (headers["cache-control"] ?? "").lowercased()
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        noStore = directives.contains("no-store")
        if directives.contains("no-cache") {
            expiresAt = now
        } else if let maxAge = directives.first(where: { $0.hasPrefix("max-age=") })
            .flatMap({ TimeInterval($0.dropFirst("max-age=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))) }) {
            expiresAt = now.addingTimeInterval(max(0, maxAge))
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

    /// Seconds from a Retry-After header (delta seconds or an HTTP date).
    static func retryAfter(_ value: String?, now: Date = Date()) -> TimeInterval? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = TimeInterval(value) { return max(0, seconds) }
        return HTTPDate.parse(value).map { max(0, $0.timeIntervalSince(now)) }
    }
}

enum HTTPDate {
    private static let formats = ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]

    static func parse(_ text: String) -> Date? {
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
