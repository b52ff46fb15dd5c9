@_spi(Benchmarks) import ArtCacheCore
import CCurlShim
import Foundation

/// Body and headers of one transfer, filled by libcurl callbacks on the
/// transport thread only.
final class TransferState {
    let maxBody: Int64
    let policy: AddressPolicy
    let sources: SourcePolicy
    var body = Data()
    var headers: [String: String] = [:]
    var tooLarge = false
    /// The address a refused connection would have gone to.
    var blocked: IPAddress?
    /// The URL of the response being received (follows redirects), for
    /// resolving a relative `Location`.
    var currentURL: String
    /// Status of the response being received.
    var status = 0
    /// The host of a redirect `allowed_sources` refused.
    var blockedSource: String?

    init(url: String, maxBody: Int64, policy: AddressPolicy, sources: SourcePolicy) {
        self.currentURL = url
        self.maxBody = maxBody
        self.policy = policy
        self.sources = sources
    }

    /// A response's `Location`: with a host pattern list, a redirect to a
    /// host not on it stops the transfer before libcurl follows it.
    func allowsRedirect(to location: String) -> Bool {
        guard (300..<400).contains(status) else { return true }
        guard let next = URL(string: location, relativeTo: URL(string: currentURL))?.absoluteURL else { return true }
        currentURL = next.absoluteString
        if sources.patterns.isEmpty { return true }
        guard let host = next.host, sources.allows(host: host) else {
            blockedSource = next.host ?? location
            return false
        }
        return true
    }
}

/// CURLOPT_OPENSOCKETFUNCTION's check (on the transport thread): the address
/// libcurl is about to connect to, for every new connection and redirect hop.
let transferAddress: ccurl_address_fn = { userdata, sockaddr, length in
    guard let userdata, let sockaddr else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(userdata).takeUnretainedValue()
    guard let address = IPAddress(sockaddr: sockaddr, length: Int(length)) else { return 0 }
    if state.policy.allows(address) { return 1 }
    state.blocked = address
    return 0
}

func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}

/// CURLOPT_WRITEFUNCTION: appends to the body, aborting past `max_body_size`
/// (counted while streaming, whatever Content-Length said).
let transferWrite: ccurl_data_fn = { data, size, count, userdata in
    guard let userdata, let data else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    if Int64(state.body.count + length) > state.maxBody {
        state.tooLarge = true
        return 0  // makes libcurl fail the transfer with CURLE_WRITE_ERROR
    }
    data.withMemoryRebound(to: UInt8.self, capacity: length) { state.body.append($0, count: length) }
    return length
}

/// CURLOPT_HEADERFUNCTION: keeps the headers of the last response only
/// (a status line starts a new response, e.g. after a redirect).
let transferHeader: ccurl_data_fn = { data, size, count, userdata in
    guard let userdata, let data else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
    if line.hasPrefix("HTTP/") {
        state.headers = [:]
        state.status = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    } else if let (name, value) = HTTPHeaderLine.field(line) {
        if name == "location", !state.allowsRedirect(to: value) { return 0 }  // CURLE_WRITE_ERROR, blockedSource set
        if let existing = state.headers[name] { state.headers[name] = existing + ", " + value } else { state.headers[name] = value }
    }
    return length
}
