// The HTTP header parsers of HTTPCachePolicy.swift. Input: up to three lines,
// the Cache-Control, Expires and Retry-After values (a missing line is a
// missing header); every line is also parsed as an HTTP date and as a
// header line.
import Foundation
import FuzzSupport
@testable import ArtCache
@_spi(Benchmarks) @testable import ArtCacheCore
@_spi(Benchmarks) @testable import ArtCacheFetch
@_spi(Benchmarks) @testable import ArtCacheRender

let now = Date(timeIntervalSince1970: 1_700_000_000)

runFuzzer { data in
    let lines = text(data).split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
    var headers: [String: String] = [:]
    if lines.count > 0 { headers["cache-control"] = lines[0] }
    if lines.count > 1 { headers["expires"] = lines[1] }

    let policy = HTTPCachePolicy(headers: headers, now: now)
    if let expiresAt = policy.expiresAt {
        require(expiresAt.timeIntervalSince1970.isFinite, "expiresAt \(expiresAt.timeIntervalSince1970) for \(headers)")
    }
    if let lifetime = policy.lifetime {
        require(lifetime.isFinite && lifetime >= 0, "lifetime \(lifetime) for \(headers)")
    }
    require((policy.expiresAt == nil) == (policy.lifetime == nil), "expiresAt and lifetime disagree for \(headers)")
    require(!policy.noStore || policy.isExplicit, "no-store without isExplicit for \(headers)")
    require(HTTPCachePolicy(headers: headers, now: now) == policy, "not deterministic for \(headers)")

    let retryLine = lines.count > 2 ? lines[2] : lines.first
    if let seconds = HTTPCachePolicy.retryAfter(retryLine, now: now) {
        require(seconds.isFinite && seconds >= 0, "retryAfter(\(shown(retryLine ?? ""))) = \(seconds)")
    }
    for line in lines {
        if let date = HTTPDate.parse(line) {
            require(date.timeIntervalSince1970.isFinite, "HTTPDate.parse(\(shown(line))) = \(date.timeIntervalSince1970)")
        }
        if let (name, value) = HTTPHeaderLine.field(line) {
            require(!name.utf8.contains(UInt8(ascii: ":")), "header name \(shown(name)) (value \(shown(value))) from \(shown(line))")
        } else {
            require(!line.utf8.contains(UInt8(ascii: ":")), "a line with a colon gave no header field: \(shown(line))")
        }
    }
}
