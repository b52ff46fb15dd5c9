// The HTTP header parsers of HTTPCachePolicy.swift. Input: up to three lines,
// the Cache-Control, Expires and Retry-After values (a missing line is a
// missing header); every line is also parsed as an HTTP date and as a
// header line. The whole input is also read as the start of a connection's
// bytes by the service's request-head reader.
@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
import Foundation
import FuzzSupport
import NIOCore

let now = Date(timeIntervalSince1970: 1_700_000_000)

runFuzzer { data in
    // RawRequestHead: a head it reads lies within the bytes, starts the
    // bytes, and reads the same from any buffer holding them.
    let bytes = ByteBuffer(bytes: data)
    switch RawRequestHead.parse(bytes, maxHead: 4096) {
    case .some(.some(let head)):
        require(head.length >= 18 && head.length <= min(data.count, 4096 + 2), "head length \(head.length) of \(data.count)")
        require(head.path.hasPrefix("/") && !head.path.utf8.contains(0x20), "path \(head.path)")
        var longer = bytes
        longer.writeString("GET / HTTP/1.1\r\n")
        if case .some(.some(let again)) = RawRequestHead.parse(longer, maxHead: 4096) {
            require(again.length == head.length && again.path == head.path, "more bytes after a head changed it")
        } else {
            require(false, "more bytes after a head lost it")
        }
    case .some(.none):
        require(data.count <= 4096 + 2, "incomplete at \(data.count) bytes, over the head limit")
    case .none:
        break
    }
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
