import Foundation

/// `[service]`: the thumbnail HTTP service (`artcache serve`).
public struct ServiceSettings: Sendable, Equatable {
    /// Listener host (an address or `localhost`) and port (0: any free port).
    public var host: String
    public var port: Int
    /// Signing keys (raw bytes, from hex): the first signs, all verify.
    public var keys: [[UInt8]]
    /// Bytes prefixed to every signed text (from hex; may be empty).
    public var salt: [UInt8]
    /// Accept `/unsafe/…` paths. Refused at startup unless the listener is on loopback.
    public var allowUnsigned: Bool
    /// What failed images answer with: "" (the error status), `placeholder`
    /// (the pipeline's placeholder) or an image file.
    public var fallback: String
    /// Image requests worked on at once; beyond that they wait in `queue`.
    public var maxInflight: Int
    /// Requests that may wait for a slot; beyond that 429.
    public var queue: Int
    /// Per-request deadline (queueing included); past it 503.
    public var timeout: TimeInterval
    /// `Cache-Control: max-age` of image responses (signed ones are also `immutable`).
    public var cacheMaxAge: TimeInterval
    /// On SIGTERM/SIGINT, how long in-flight requests may take to finish.
    public var shutdownGrace: TimeInterval
    /// One log line per image request (info level).
    public var accessLog: Bool = true

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

extension ServiceSettings {
    /// The documented defaults of `cache.conf`; set the fields to change them.
    public init() { self = Configuration.defaults.service }
}

extension Configuration {
    /// `[service]` from checked values; malformed listen, keys or salt name their key.
    static func service(string: (String) -> String, list: (String) -> [String], integer: (String) -> Int,
                        duration: (String) -> TimeInterval, bool: (String) -> Bool,
                        source: String) throws(ConfigError) -> ServiceSettings {
        func invalid(_ key: String, _ message: String) -> ConfigError {
            ConfigError(code: .invalidValue, source: source, key: key, message: message)
        }
        guard let listen = ServiceSettings.parseListen(string("service.listen")) else {
            throw invalid("service.listen", "invalid value \"\(string("service.listen"))\": expected HOST:PORT like 127.0.0.1:8080 or [::1]:8080")
        }
        var keys: [[UInt8]] = []
        for (index, text) in list("service.keys").enumerated() {
            guard let key = ServiceSettings.parseHex(text), key.count >= 16 else {
                throw invalid("service.keys", "key \(index + 1) is not hex of at least 16 bytes (32 hex digits); make one with `openssl rand -hex 32`")
            }
            keys.append(key)
        }
        guard let salt = ServiceSettings.parseHex(string("service.salt")) else {
            throw invalid("service.salt", "not an even number of hex digits")
        }
        return ServiceSettings(
            host: listen.host, port: listen.port, keys: keys, salt: salt, allowUnsigned: bool("service.allow_unsigned"),
            fallback: Configuration.expandTilde(string("service.fallback")), maxInflight: integer("service.max_inflight"),
            queue: integer("service.queue"), timeout: duration("service.timeout"),
            cacheMaxAge: duration("service.cache_max_age"), shutdownGrace: duration("service.shutdown_grace"),
            accessLog: bool("service.access_log"))
    }

    /// `[presets]`: each a valid options string without a preset of its own.
    static func presets(values: [String: ConfigValue], source: String) throws(ConfigError) -> [String: ThumbnailOptions] {
        var presets: [String: ThumbnailOptions] = [:]
        for (path, value) in values where path.hasPrefix("presets.") {
            let name = String(path.dropFirst("presets.".count))
            guard case .string(let text) = value else { continue }
            guard ThumbnailOptions.isPresetName(name) else {
                throw ConfigError(code: .invalidValue, source: source, key: path, message: "preset names are [a-z0-9_-]+")
            }
            do throws(ArtCacheError) {
                let options = try ThumbnailOptions(parsing: text)
                guard options.preset == nil else {
                    throw ArtCacheError(.invalidRequest, "a preset cannot name another preset")
                }
                presets[name] = try options.resolved(presets: [:])
            } catch {
                throw ConfigError(code: .invalidValue, source: source, key: path, message: error.message)
            }
        }
        return presets
    }
}
