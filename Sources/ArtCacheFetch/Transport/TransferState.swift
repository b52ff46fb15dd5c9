import ArtCacheCore
import CCurlShim
import Foundation

/// A redirect libcurl could not follow (its `Location` is not a URL libcurl
/// can parse, or has a scheme libcurl does not know): refused before libcurl tries.
struct UnfollowableRedirect: Sendable, Equatable {
    var location: String
    var reason: String
    var unsupportedScheme: Bool
}

/// Body and headers of one transfer, filled by libcurl callbacks on the
/// transport thread only.
final class TransferState {
    let maxBody: Int64
    let policy: AddressPolicy
    let sources: SourcePolicy
    /// `[download] max_redirects`: past it (or at 0) libcurl follows no `Location`.
    let maxRedirects: Int
    var body = Data()
    var headers: [String: String] = [:]
    var tooLarge = false
    /// The address a refused connection would have gone to.
    var blocked: IPAddress?
    /// The URL of the response being received, as libcurl spells it (it
    /// follows redirects): a relative `Location` resolves against it.
    private(set) var currentURL: String
    /// Status of the response being received.
    private(set) var status = 0
    /// The host of a redirect `allowed_sources` refused.
    private(set) var blockedSource: String?
    /// A redirect libcurl could not have followed, refused.
    private(set) var unfollowableRedirect: UnfollowableRedirect?
    /// Where libcurl goes after the response being received (its first
    /// non-empty `Location`, when libcurl follows it).
    private var nextURL: String?
    private var redirectsFollowed = 0
    /// Between a status line and the blank line that ends its head (lines
    /// after it are trailers, where libcurl looks for no `Location`).
    private var inHead = false

    init(url: String, maxBody: Int64, policy: AddressPolicy, sources: SourcePolicy, maxRedirects: Int) {
        self.currentURL = url
        self.maxBody = maxBody
        self.policy = policy
        self.sources = sources
        self.maxRedirects = maxRedirects
    }

    /// One header line (CURLOPT_HEADERFUNCTION); false stops the transfer.
    /// Keeps the headers of the last response only: a status line starts a
    /// new one (after a redirect, the response of the URL libcurl followed).
    func receiveHeader(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        if line.starts(with: "HTTP/".utf8) {
            if let next = nextURL {
                currentURL = next
                redirectsFollowed += 1
                nextURL = nil
            }
            headers = [:]
            status = String(decoding: line, as: UTF8.self).split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            inHead = true
            return true
        }
        if line.allSatisfy({ $0 == 13 || $0 == 10 }) {
            inHead = false
            return true
        }
        // The Location libcurl follows: the first non-empty one of a 3xx, while it has redirects left.
        if inHead, nextURL == nil, (300..<400).contains(status), redirectsFollowed < maxRedirects,
           let location = RedirectTarget.locationValue(ofHeaderLine: line), !location.isEmpty {
            guard follows(location) else { return false }
        }
        if let (name, value) = HTTPHeaderLine.field(line) {
            if let existing = headers[name] { headers[name] = existing + ", " + value } else { headers[name] = value }
        }
        return true
    }

    /// Whether libcurl may follow `location` from `currentURL`: it must be a
    /// URL libcurl can parse (fail closed: what cannot be read is not
    /// followed), and with an allowlist, go to a host on it.
    private func follows(_ location: [UInt8]) -> Bool {
        switch RedirectTarget.resolve(location, against: currentURL) {
        case .unfollowable(let reason, let unsupportedScheme):
            unfollowableRedirect = UnfollowableRedirect(location: String(decoding: location, as: UTF8.self), reason: reason,
                                                        unsupportedScheme: unsupportedScheme)
            return false
        case .follow(let url, let host):
            guard sources.allows(libcurlHost: host) else {
                blockedSource = host
                return false
            }
            nextURL = url
            return true
        }
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

/// The bytes of `data` (nil, 0 for none), valid inside `body` only.
func withOptionalBytes<R>(_ data: Data?, _ body: (UnsafeRawPointer?, Int) -> R) -> R {
    guard let data else { return body(nil, 0) }
    if data.isEmpty { return withUnsafeBytes(of: UInt8(0)) { body($0.baseAddress, 0) } }
    return data.withUnsafeBytes { body($0.baseAddress, $0.count) }
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

/// CURLOPT_HEADERFUNCTION: see ``TransferState/receiveHeader(_:)``. A refused
/// redirect returns 0: libcurl fails the transfer with CURLE_WRITE_ERROR
/// before following it, and the state says why.
let transferHeader: ccurl_data_fn = { data, size, count, userdata in
    guard let userdata, let data else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    let accepted = data.withMemoryRebound(to: UInt8.self, capacity: length) {
        state.receiveHeader(UnsafeBufferPointer(start: $0, count: length))
    }
    return accepted ? length : 0
}
