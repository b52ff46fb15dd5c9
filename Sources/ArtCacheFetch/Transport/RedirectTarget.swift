import CCurlShim
import Foundation

/// Where a redirect goes, read the way libcurl reads it when it follows one:
/// the allowlist must judge the URL libcurl will connect to, and no other
/// parser's idea of it (Foundation, a browser's WHATWG rules and libcurl
/// disagree on backslashes, single slashes, numeric hosts, characters a host
/// may hold...).
package enum RedirectTarget: Equatable, Sendable {
    /// libcurl follows the hop to `url`, connecting to `host` as libcurl
    /// spells it (IPv4 as a dotted quad, IPv6 in brackets, case kept).
    case follow(url: String, host: String)
    /// libcurl cannot follow it (`reason` is libcurl's): it would fail the
    /// transfer, so the hop is refused here already, whatever the allowlist.
    /// `unsupportedScheme`: a scheme libcurl does not know (libcurl would
    /// report CURLE_UNSUPPORTED_PROTOCOL, not a malformed URL).
    case unfollowable(reason: String, unsupportedScheme: Bool)

    /// Resolves `location` (a `Location` value, see ``locationValue(ofHeaderLine:)``)
    /// against `base`, the URL of the response that carried it, with
    /// libcurl's URL API and libcurl's own flags (`ccurl_redirect_target`).
    package static func resolve(_ location: some Collection<UInt8>, against base: String) -> RedirectTarget {
        var text = Array(location.prefix { $0 != 0 })  // a C string: libcurl never reads past a NUL
        text.append(0)
        var url: UnsafeMutablePointer<CChar>?
        var host: UnsafeMutablePointer<CChar>?
        let code = text.withUnsafeBufferPointer { location in
            location.withMemoryRebound(to: CChar.self) { ccurl_redirect_target(base, $0.baseAddress, &url, &host) }
        }
        defer {
            ccurl_free(url)
            ccurl_free(host)
        }
        guard code == 0, let url, let host else {
            return .unfollowable(reason: String(cString: ccurl_url_strerror(code)), unsupportedScheme: code == CCURL_URLE_UNSUPPORTED_SCHEME)
        }
        return .follow(url: String(cString: url), host: String(cString: host))
    }

    /// The value of a `Location` header line as libcurl takes it, or nil for
    /// any other line. libcurl (lib/http.c) reads a line that starts with
    /// `Location:` in any case (no space before the colon), skips the
    /// whitespace after the colon, ends the value at the first CR, else LF,
    /// else NUL, and drops the whitespace before a CR or LF end
    /// (`Curl_copy_header_value`). Bytes, not a String: decoding would turn
    /// bytes that are not UTF-8 into U+FFFD, which libcurl never sees.
    package static func locationValue(ofHeaderLine line: some Collection<UInt8>) -> [UInt8]? {
        let bytes = Array(line.prefix { $0 != 0 })
        let name = Array("location:".utf8)
        guard bytes.count >= name.count, zip(bytes, name).allSatisfy({ lowercased($0) == $1 }) else { return nil }
        var value = bytes[name.count...].drop { isSpace($0) }
        guard let end = value.firstIndex(of: 13) ?? value.firstIndex(of: 10) else { return Array(value) }
        value = value[..<end]
        while let last = value.last, isSpace(last) { value.removeLast() }
        return Array(value)
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte + 0x20 : byte }

    /// libcurl's ISSPACE: space, tab, LF, VT, FF, CR.
    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
}
