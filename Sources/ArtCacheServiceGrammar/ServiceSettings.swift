import ArtCacheCore
import Foundation

/// `[service]`: the thumbnail HTTP service (`artcache serve`) and the
/// signer fronts use. `ServiceSettings()` holds the documented defaults of
/// `cache.conf` (the configuration table reads them from here).
public struct ServiceSettings: Sendable, Equatable {
    /// Listener host (an address or `localhost`) and port (0: any free port).
    public var host = "127.0.0.1"
    public var port = 8080
    /// Signing keys (raw bytes, from hex): the first signs, all verify.
    public var keys: [[UInt8]] = []
    /// Bytes prefixed to every signed text (from hex; may be empty).
    public var salt: [UInt8] = []
    /// Accept `/unsafe/…` paths. Refused at startup unless the listener is on loopback.
    public var allowUnsigned = false
    /// What failed images answer with: "" (the error status), `placeholder`
    /// (the pipeline's placeholder) or an image file.
    public var fallback = ""
    /// Image requests worked on at once; beyond that they wait in `queue`.
    public var maxInflight = 64
    /// Requests that may wait for a slot; beyond that 429.
    public var queue = 256
    /// Per-request deadline (queueing included); past it 503.
    public var timeout: TimeInterval = 30
    /// The longest `Cache-Control: max-age` of image responses (each gets what
    /// is left of its original's freshness, at most this).
    public var cacheMaxAge: TimeInterval = 365 * 86400
    /// On SIGTERM/SIGINT, how long in-flight requests may take to finish.
    public var shutdownGrace: TimeInterval = 10
    /// One log line per image request (info level).
    public var accessLog = true
    /// The largest result set `POST /v1/manifest` reads (413 beyond it).
    public var manifestMaxBody: Int64 = 2 << 20
    /// How far ahead a manifest request's `X-ArtCache-Expires` may be (its
    /// signature's longest life): a later expiry is refused, and so is a
    /// request past its expiry.
    public var manifestSignatureMaxAge: TimeInterval = 300
    /// How long a keep-alive connection may sit with no request before it is
    /// closed (memory hits answered in the channel pipeline count as requests).
    public var idleTimeout: TimeInterval = 60
    /// Deadline for reading one request's headers and body, from its first
    /// byte (or from the connection's start, for the first request): a client
    /// that sends slowly (headers, or a body trickled a byte at a time) is cut.
    public var requestReadTimeout: TimeInterval = 30
    /// Connections open at once; more wait in the kernel's accept backlog.
    /// Keep it below the process's descriptor limit (the unit's `LimitNOFILE`).
    public var maxConnections = 4096
    /// May `f=auto` answer AVIF (`[service] avif`): as the cold answer when
    /// the format policy picks it, only encoded behind the answer, or never.
    /// `f=avif` in a URL still forces it.
    public var avif = FormatUse.cold
    /// The same for WebP (`[service] webp`).
    public var webp = FormatUse.cold
    /// The same for JPEG XL (`[service] jxl`; Safari 17+ asks for it): off
    /// by default. By the calibrated table it would be Safari's cold answer
    /// at 600 px only (AVIF's bytes in less encode time, called directly),
    /// never the one behind; through libvips' `jxlsave` its time ties
    /// AVIF's (Benchmarks/quality/README.md, "Issue 52: JPEG XL").
    public var jxl = FormatUse.off
    /// The ring's front door (`[service] front_url`, e.g. `http://front.internal`;
    /// empty: none). With it, a manifest warms its pending items through the
    /// front, as signed `pri=low` requests, so each is stored by the node
    /// that will serve it, not by the node that got the manifest.
    public var frontURL = ""

    /// How `f=auto` may use a format the client accepts (README "What browsers get").
    public enum FormatUse: String, Sendable, Equatable, CaseIterable {
        /// The cold answer when the policy picks it (cheapest within 10% of
        /// the smallest at that size), and the better format behind it.
        case cold
        /// Only encoded behind a cold answer in another format, and kept
        /// when it saves 15% of the bytes.
        case behind
        /// Never for `f=auto`.
        case off
    }

    /// The documented defaults of `cache.conf`; set the fields to change them.
    public init() {}

    /// `host:port` as a URL authority (`[::1]:8080` for IPv6).
    public var listen: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// True when the listener accepts loopback connections only.
    public var isLoopback: Bool {
        if host == "localhost" { return true }
        guard let address = IPAddress(host) else { return false }
        return AddressClass.of(address) == .loopback
    }

    /// Parses `HOST:PORT` (`[v6]:PORT` for IPv6); nil when malformed.
    public static func parseListen(_ text: String) -> (host: String, port: Int)? {
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
            guard IPAddress(String(host)) != nil else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
            guard !host.isEmpty, !host.contains(":") else { return nil }
        }
        guard let number = Int(port), (0...65535).contains(number), port.allSatisfy(\.isASCII) else { return nil }
        return (String(host), number)
    }

    /// Raw bytes of a hex string; nil when not an even number of hex digits.
    public static func parseHex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
