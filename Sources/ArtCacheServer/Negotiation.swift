import ArtCache
@_spi(Benchmarks) import ArtCacheCore
@_spi(Benchmarks) import ArtCacheRender
@_spi(Benchmarks) import ArtCacheStore
import Foundation

/// `f=auto`: the best format the client says it takes, from `Accept`.
enum Negotiation {
    /// AVIF when accepted (and this libvips encodes it), then WebP, else
    /// `auto` (JPEG, or PNG for alpha). A range with `q=0` is a refusal.
    static func format(accept: String?, avif: Bool) -> VariantSpec.Format {
        guard let accept else { return .auto }
        var types: Set<String> = []
        for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let type = parts.first else { continue }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            if quality > 0 { types.insert(type) }
        }
        if avif, types.contains("image/avif") { return .avif }
        if types.contains("image/webp") { return .webp }
        return .auto
    }
}

/// HTTP-date (RFC 9110 IMF-fixdate) without a shared formatter.
enum HTTPDate {
    static func string(_ seconds: Double) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
