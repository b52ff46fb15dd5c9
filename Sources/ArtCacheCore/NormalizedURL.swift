import Foundation

/// A URL in the one spelling the cache keys on, so that one resource has one
/// key (and one per-host limit): lowercase scheme and host, one spelling per
/// IP address (`2130706433`, `0x7f.1` and `127.0.0.1` are one host; IPv6 in
/// RFC 5952 form), no trailing dot on the host, default port dropped, dot
/// segments removed, percent-encoded unreserved characters decoded and other
/// escapes in upper case, an empty query and the fragment dropped, empty path
/// as `/`. Otherwise the path and query are kept as given: only characters a
/// URL may not hold are escaped, escapes already there are not escaped again.
package struct NormalizedURL: Hashable, Sendable, CustomStringConvertible {
    package let string: String
    /// Lowercased host, without brackets for IPv6.
    package let host: String
    package let scheme: String

    package var key: CacheKey { CacheKey(normalizedURL: self) }
    /// `host` or `host:port` as spelled in ``string`` (IPv6 in brackets): one origin server.
    package var authority: String {
        let rest = string.dropFirst(scheme.count + 3)
        return String(rest.prefix { $0 != "/" && $0 != "?" })
    }
    package var description: String { string }

    /// Normalizes `text`; throws `.invalidURL` for anything but an absolute
    /// http or https URL with a host and without credentials.
    package init(_ text: String) throws(ArtCacheError) {
        let trimmed = text.trimmingWhitespace(newlines: true)
        guard !trimmed.isEmpty else { throw ArtCacheError(.invalidURL, "empty URL") }
        // Escaped here, then parsed strictly: with a character it does not
        // take, `URLComponents(string:)` escapes the whole URL again.
        guard let components = URLComponents(string: Self.escapingWhatMustBeEscaped(trimmed), encodingInvalidCharacters: false)
        else { throw ArtCacheError(.invalidURL, "not a valid URL: \(trimmed)") }
        guard let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw ArtCacheError(.invalidURL, "only http and https URLs can be cached: \(trimmed)")
        }
        guard components.percentEncodedUser == nil, components.percentEncodedPassword == nil else {
            throw ArtCacheError(.invalidURL, "URLs with credentials (user:password@) are refused: \(scheme)://…")
        }
        // The host as written, not as Foundation re-spells it (it turns
        // `xn--` labels into Unicode and Unicode into `xn--`, so its answer
        // would not survive a second normalization).
        guard let rawHost = Self.writtenHost(trimmed), !rawHost.isEmpty else {
            throw ArtCacheError(.invalidURL, "URL has no host: \(trimmed)")
        }
        let host = try Self.canonicalHost(rawHost, url: trimmed)
        var result = "\(scheme)://"
        result += host.contains(":") ? "[\(host)]" : host
        if let port = components.port {
            guard (1...65535).contains(port) else { throw ArtCacheError(.invalidURL, "port \(port) out of range: \(trimmed)") }
            if !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) { result += ":\(port)" }
        }
        let path = Self.removeDotSegments(Self.normalizeEscapes(components.percentEncodedPath))
        result += path.isEmpty ? "/" : path
        if let query = components.percentEncodedQuery, !query.isEmpty { result += "?\(Self.normalizeEscapes(query))" }
        self.string = result
        self.host = host
        self.scheme = scheme
    }
}

extension NormalizedURL {
    /// The host part of an absolute URL as written: after `scheme://` and any
    /// `userinfo@`, before the port, path, query or fragment (IPv6 with its brackets).
    static func writtenHost(_ url: String) -> String? {
        // The authority starts right after the scheme's `://`, nowhere else.
        // Read byte by byte: as Characters, a delimiter followed by a
        // combining mark is one grapheme that is not the delimiter (a search
        // for ":" would go on to a later `://`).
        let bytes = url.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
              bytes[colon...].starts(with: "://".utf8) else { return nil }
        let start = bytes.index(colon, offsetBy: 3)
        var authority = bytes[start...].prefix { !"/?#\\".utf8.contains($0) }
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[authority.index(after: at)...] }
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return String(Substring(authority)) }
            return String(Substring(authority[...close]))
        }
        return String(Substring(authority.prefix { $0 != UInt8(ascii: ":") }))
    }

    /// The host in its one spelling: IPv6 in RFC 5952 form, IPv4 as a dotted
    /// quad (from any of the decimal, octal, hex and short forms browsers and
    /// libcurl accept), names lowercased without a trailing dot.
    package static func canonicalHost(_ raw: String, url: String) throws(ArtCacheError) -> String {
        isCanonicalHost(raw.utf8) ? raw : try canonicalHostByRules(raw, url: url)
    }

    /// ``canonicalHost(_:url:)`` by its rules, step by step.
    static func canonicalHostByRules(_ raw: String, url: String) throws(ArtCacheError) -> String {
        func invalid(_ why: String) -> ArtCacheError { ArtCacheError(.invalidURL, "\(why): \(url)") }
        if raw.hasPrefix("[") {
            guard raw.hasSuffix("]") else { throw invalid("unclosed IPv6 address") }
            let inner = String(raw.dropFirst().dropLast())
            guard !inner.contains("%") else { throw invalid("IPv6 zone identifiers are refused") }
            guard let address = IPAddress(inner), case .v6 = address else { throw invalid("not an IPv6 address") }
            return address.description
        }
        guard let decoded = raw.removingPercentEncoding else { throw invalid("malformed escape in host") }
        guard decoded.utf8.allSatisfy({ $0 < 0x80 }) else {
            throw invalid("non-ASCII host: give its punycode (xn--) form")
        }
        var host = decoded.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard !host.isEmpty, !labels.contains(where: \.isEmpty) else { throw invalid("empty label in host") }
        guard host.utf8.allSatisfy({ isHostByte($0) }) else { throw invalid("host has characters not allowed in a host name") }
        // A host whose last label is a number is an IPv4 address (WHATWG URL).
        if let last = labels.last, last.first?.isNumber == true, Self.ipv4Number(last) != nil || last.allSatisfy(\.isNumber) {
            guard let address = ipv4(labels) else { throw invalid("not a valid IPv4 address") }
            return IPAddress.v4(address).description
        }
        return host
    }

    /// Whether `host` is already in its one spelling, read in one pass (most
    /// are; every URL of a result set is normalized several times on its
    /// way): a name of lower-case labels whose last one does not start
    /// with a digit, or a dotted quad of decimal bytes without leading
    /// zeros. Anything else takes the full rules.
    static func isCanonicalHost(_ host: String.UTF8View) -> Bool {
        var labels = 0, labelLength = 0, labelValue = 0, digitsOnly = true, allDigits = true, lastStartsWithDigit = false
        for byte in host {
            if byte == UInt8(ascii: ".") {
                guard labelLength > 0, !digitsOnly || labelValue <= 255 else { return false }
                labels += 1
                (labelLength, labelValue, digitsOnly) = (0, 0, true)
                continue
            }
            guard isHostByte(byte) else { return false }
            let digit = byte >= 0x30 && byte <= 0x39
            if labelLength == 0 { lastStartsWithDigit = digit }
            if digit {
                // A leading zero is octal to a browser: the full rules spell it.
                if labelLength > 0, labelValue == 0, digitsOnly { return false }
                labelValue = min(labelValue * 10 + Int(byte - 0x30), 1000)
            } else {
                digitsOnly = false
                allDigits = false
            }
            labelLength += 1
        }
        guard labelLength > 0 else { return false }  // empty, or a trailing dot
        labels += 1
        if !lastStartsWithDigit { return true }
        // A last label starting with a digit: an IPv4 address, canonical only as four decimal bytes.
        return labels == 4 && allDigits && labelValue <= 255
    }

    private static func isHostByte(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x2E || c == 0x5F
    }

    /// One part of an IPv4 host: decimal, `0x` hex or leading-zero octal.
    static func ipv4Number(_ part: Substring) -> UInt64? {
        guard !part.isEmpty, part.count <= 32 else { return nil }
        if part.hasPrefix("0x") { return part.count == 2 ? 0 : UInt64(part.dropFirst(2), radix: 16) }
        if part.count > 1, part.hasPrefix("0") { return UInt64(part.dropFirst(), radix: 8) }
        return UInt64(part, radix: 10)
    }

    /// `a`, `a.b`, `a.b.c` or `a.b.c.d` (the last part fills the remaining bytes).
    static func ipv4(_ labels: [Substring]) -> UInt32? {
        guard (1...4).contains(labels.count) else { return nil }
        var numbers: [UInt64] = []
        for label in labels {
            guard let number = ipv4Number(label) else { return nil }
            numbers.append(number)
        }
        let last = numbers.removeLast()
        guard numbers.allSatisfy({ $0 <= 255 }), last < (UInt64(1) << (8 * (4 - numbers.count))) else { return nil }
        var value: UInt64 = 0
        for (index, number) in numbers.enumerated() { value |= number << (8 * (3 - index)) }
        return UInt32(value | last)
    }

    /// `url` with what must be escaped after its authority escaped and
    /// nothing else: bytes a URL may not hold (space, `"`, `<`, `>`, `[`,
    /// `\`, `]`, `^`, `` ` ``, `{`, `|`, `}`, controls, non-ASCII as UTF-8)
    /// as `%XX`, and a `%` not followed by two hex digits as `%25`; escapes
    /// already there are kept as given. The fragment is cut (the key drops
    /// it). The authority is left as written: its checks refuse what it may not hold.
    ///
    /// Foundation's `URLComponents(string:)` escapes such a URL again as a
    /// whole, `%` included: `?x=%41&id=[x]` became `?x=%2541&id=%5Bx%5D`,
    /// another resource fetched and cached under another key.
    static func escapingWhatMustBeEscaped(_ url: String) -> String {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
              bytes[colon...].starts(with: "://".utf8) else { return url }
        let afterAuthority = bytes[(colon + 3)...].firstIndex { "/?#".utf8.contains($0) } ?? bytes.count
        let end = bytes[afterAuthority...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.count
        var out = Array(bytes[..<afterAuthority])
        out.reserveCapacity(end + 16)
        var index = afterAuthority
        while index < end {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                let escape = index + 2 < end && hexDigit(bytes[index + 1]) != nil && hexDigit(bytes[index + 2]) != nil
                out += escape ? [byte] : Array("%25".utf8)
            } else if isAllowedAfterAuthority(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), upperHex(byte >> 4), upperHex(byte & 0x0F)]
            }
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 3986 path and query bytes: unreserved, sub-delims, `:`, `@`, `/`, `?` (and `%` of an escape).
    private static func isAllowedAfterAuthority(_ c: UInt8) -> Bool {
        isUnreserved(c) || "!$&'()*+,;=:@/?".utf8.contains(c)
    }

    /// Decodes escapes of unreserved characters (`%41` → `A`, `%7E` → `~`) and
    /// upper-cases the hex digits of the others (`%2f` → `%2F`).
    static func normalizeEscapes(_ text: String) -> String {
        guard text.contains("%") else { return text }
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexDigit(bytes[index + 1]), let low = hexDigit(bytes[index + 2]) {
                let value = high << 4 | low
                if isUnreserved(value) {
                    out.append(value)
                } else {
                    out += [UInt8(ascii: "%"), upperHex(high), upperHex(low)]
                }
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    private static func upperHex(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x41 + v - 10 }

    private static func isUnreserved(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
            || c == 0x2D || c == 0x2E || c == 0x5F || c == 0x7E
    }

    /// RFC 3986 §5.2.4: `/a/./b/../c` → `/a/c`.
    static func removeDotSegments(_ path: String) -> String {
        // Only a segment that starts with a dot can be "." or "..".
        var previous = UInt8(ascii: "/")
        guard path.utf8.contains(where: { byte in
            defer { previous = byte }
            return byte == UInt8(ascii: ".") && previous == UInt8(ascii: "/")
        }) else { return path }
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            if index == 0 && segment.isEmpty { continue }
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }
}
