import ArtCacheCore
import Foundation

/// The format of a body, as decided from its bytes alone (never from a file
/// name or a declared `Content-Type`).
package enum SniffedFormat: String, Sendable, Hashable, CaseIterable, Codable {
    // Images we support.
    /// JPEG (also MPO multi-picture JPEG, Ultra HDR).
    case jpeg
    /// Still PNG.
    case png
    /// Animated PNG (an `acTL` chunk before the first `IDAT`).
    case apng
    /// GIF 87a / 89a, still or animated.
    case gif
    /// WebP (VP8, VP8L or VP8X), still or animated.
    case webp
    /// Windows bitmap.
    case bmp
    /// TIFF, classic or BigTIFF.
    case tiff
    /// Windows icon or cursor (ICO / CUR).
    case ico
    /// HEIF with HEVC-coded images.
    case heic
    /// HEIF with some other (or unstated) codec.
    case heif
    /// AVIF still image or image sequence.
    case avif
    /// JPEG XL, bare codestream or ISO-BMFF container.
    case jxl
    /// SVG, plain or gzip-compressed (svgz).
    case svg

    // Recognised, but not images we serve.
    /// Adobe Photoshop document.
    case psd
    /// JPEG 2000: a JP2 file or a bare J2K codestream (libvips reads it only
    /// through libopenjp2, which this build does not use: `unsupported`).
    case jp2
    /// Truevision TGA (a v2 file's footer, or a strict check of its header).
    case tga
    /// The Quite OK Image format.
    case qoi
    /// PDF document.
    case pdf
    /// HTML document (typically an error page from a proxy or CDN).
    case html
    /// JSON document.
    case json
    /// XML document that is not SVG or HTML.
    case xml
    /// Plain UTF-8 (or BOM-marked UTF-16) text.
    case text
    /// A body of zero bytes.
    case empty
    /// Anything else.
    case unknown

    /// True for the image formats we serve (`jpeg` through `svg`).
    package var isImage: Bool {
        switch self {
        case .jpeg, .png, .apng, .gif, .webp, .bmp, .tiff, .ico, .heic, .heif, .avif, .jxl, .svg:
            return true
        case .psd, .jp2, .tga, .qoi, .pdf, .html, .json, .xml, .text, .empty, .unknown:
            return false
        }
    }

    /// Image formats recognised but not taken: refused as `unsupported`,
    /// not `not_an_image`, and not remembered by the negative cache (the
    /// origin serves an image; a build that takes the format could).
    package var isUnsupportedImage: Bool {
        switch self {
        case .psd, .jp2, .tga, .qoi: true
        default: false
        }
    }

    /// The canonical media type for the format.
    package var mimeType: String {
        switch self {
        case .jpeg: return "image/jpeg"
        case .png: return "image/png"
        case .apng: return "image/apng"
        case .gif: return "image/gif"
        case .webp: return "image/webp"
        case .bmp: return "image/bmp"
        case .tiff: return "image/tiff"
        case .ico: return "image/x-icon"
        case .heic: return "image/heic"
        case .heif: return "image/heif"
        case .avif: return "image/avif"
        case .jxl: return "image/jxl"
        case .svg: return "image/svg+xml"
        case .psd: return "image/vnd.adobe.photoshop"
        case .jp2: return "image/jp2"
        case .tga: return "image/x-tga"
        case .qoi: return "image/qoi"
        case .pdf: return "application/pdf"
        case .html: return "text/html"
        case .json: return "application/json"
        case .xml: return "application/xml"
        case .text: return "text/plain"
        case .empty: return "application/x-empty"
        case .unknown: return "application/octet-stream"
        }
    }

    /// A short human-readable name, for logs and error messages.
    package var displayName: String {
        switch self {
        case .jpeg: return "JPEG"
        case .png: return "PNG"
        case .apng: return "APNG"
        case .gif: return "GIF"
        case .webp: return "WebP"
        case .bmp: return "BMP"
        case .tiff: return "TIFF"
        case .ico: return "ICO"
        case .heic: return "HEIC"
        case .heif: return "HEIF"
        case .avif: return "AVIF"
        case .jxl: return "JPEG XL"
        case .svg: return "SVG"
        case .psd: return "PSD"
        case .jp2: return "JPEG 2000"
        case .tga: return "TGA"
        case .qoi: return "QOI"
        case .pdf: return "PDF"
        case .html: return "HTML"
        case .json: return "JSON"
        case .xml: return "XML"
        case .text: return "plain text"
        case .empty: return "empty body"
        case .unknown: return "unknown binary"
        }
    }
}

/// What ``Sniffer/sniff(_:)`` found out about a body.
package struct SniffResult: Sendable, Hashable {
    /// The detected format.
    package let format: SniffedFormat
    /// True for an animated GIF (more than one image descriptor), an APNG,
    /// an animated WebP (VP8X animation flag or an `ANIM` chunk) and an AVIF
    /// image sequence (`avis` brand); false otherwise.
    package let isAnimated: Bool
    /// True when the body is gzip-compressed SVG (svgz).
    package let isCompressedSVG: Bool
    /// The canonical media type of ``format``.
    package var mimeType: String { format.mimeType }

    /// Creates a result; mostly useful in tests.
    package init(format: SniffedFormat, isAnimated: Bool = false, isCompressedSVG: Bool = false) {
        self.format = format
        self.isAnimated = isAnimated
        self.isCompressedSVG = isCompressedSVG
    }
}

/// Decides the real format of a body from its leading bytes.
///
/// Only a bounded prefix is ever examined (64 KiB; GIF frame counting may scan
/// up to 1 MiB), and nothing is allocated in proportion to the body, except
/// that a JSON-looking body under 1 MiB is validated with `JSONSerialization`.
package enum Sniffer {
    /// How many leading bytes most checks look at.
    static let prefixLimit = 64 * 1024
    /// How far GIF block walking may go to find a second frame.
    static let gifScanLimit = 1024 * 1024
    /// Bodies below this size that look like JSON are parsed to confirm it.
    static let jsonParseLimit = 1024 * 1024
    /// How much of a gzip stream is inflated to look for SVG.
    static let gzipInflateLimit = 16 * 1024

    /// Detects the format of `data` from its bytes.
    package static func sniff(_ data: Data) -> SniffResult {
        if data.isEmpty { return SniffResult(format: .empty) }
        return data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> SniffResult in
            let whole = SniffBytes(raw)
            let prefix = whole.prefix(prefixLimit)
            if let binary = sniffBinary(prefix: prefix, whole: whole) {
                return binary
            }
            if prefix[0] == 0x1F, prefix.count > 1, prefix[1] == 0x8B {
                return sniffGzip(prefix: prefix, whole: whole)
            }
            return SniffResult(format: sniffText(prefix: prefix, body: data))
        }
    }

    /// Normalises a `Content-Type` header value to its lowercased media type
    /// without parameters (`"Image/JPEG; charset=x"` → `"image/jpeg"`);
    /// nil or empty → nil.
    package static func mediaType(ofContentType header: String?) -> String? {
        guard let header else { return nil }
        let essence = header.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let trimmed = essence.trimmingWhitespace(newlines: true).lowercased()
        return trimmed.isEmpty ? nil : trimmed
    }

    /// True when the declared header and the sniffed result disagree.
    ///
    /// Aliases are folded first: `image/jpg` and `image/pjpeg` are
    /// `image/jpeg`; `image/x-png` is `image/png`; `image/vnd.microsoft.icon`
    /// and `image/ico` are `image/x-icon`. `image/png` declared for an APNG is
    /// not a mismatch. A missing header, or `application/octet-stream`, is a
    /// mismatch for any image.
    package static func isMismatch(declared: String?, sniffed: SniffResult) -> Bool {
        guard let declaredType = mediaType(ofContentType: declared) else { return true }
        let canonical = canonicalMediaType(declaredType)
        if canonical == sniffed.mimeType { return false }
        if sniffed.format == .apng, canonical == "image/png" { return false }
        return true
    }

    /// Folds common aliases onto the media types ``SniffedFormat/mimeType`` uses.
    static func canonicalMediaType(_ type: String) -> String {
        switch type {
        case "image/jpg", "image/pjpeg": return "image/jpeg"
        case "image/x-png": return "image/png"
        case "image/vnd.microsoft.icon", "image/ico": return "image/x-icon"
        case "image/vnd.mozilla.apng": return "image/apng"
        case "image/x-ms-bmp", "image/x-bmp": return "image/bmp"
        case "text/xml": return "application/xml"
        default: return type
        }
    }

    /// Largest an svgz may inflate to; past it (or when the stream is cut
    /// or corrupt) the body is not SVG.
    static let svgzInflatedLimit = 32 * 1024 * 1024

    /// svgz: inflate a little of the stream and look for SVG in it; SVG only
    /// when the whole stream then inflates to its end (a truncated gzip
    /// stream is not an SVG, however SVG its start looks).
    static func sniffGzip(prefix: SniffBytes, whole: SniffBytes) -> SniffResult {
        let compressed = Data(prefix.base)
        guard let inflated = gunzipPrefix(compressed, maxOutput: gzipInflateLimit), !inflated.isEmpty else {
            return SniffResult(format: .unknown)
        }
        let format: SniffedFormat = inflated.withUnsafeBytes { raw in
            let bytes = SniffBytes(raw)
            // The inflated prefix is usually cut mid-stream: judge it by the prefix alone.
            let kind = sniffText(prefix: bytes, body: nil)
            if kind == .svg { return .svg }
            if kind != .html, containsASCIICaseInsensitive(bytes, "<svg") { return .svg }
            return .unknown
        }
        guard format == .svg, gzipStreamIsComplete(Data(whole.base), maxOutput: svgzInflatedLimit) else {
            return SniffResult(format: .unknown)
        }
        return SniffResult(format: .svg, isCompressedSVG: true)
    }
}

extension Sniffer {
    /// ASCII case-insensitive substring search.
    static func containsASCIICaseInsensitive(_ bytes: SniffBytes, _ needle: String) -> Bool {
        let pattern = Array(needle.lowercased().utf8)
        guard !pattern.isEmpty, bytes.count >= pattern.count else { return false }
        var start = 0
        while start + pattern.count <= bytes.count {
            var matched = true
            for offset in 0..<pattern.count where asciiLower(bytes[start + offset]) != pattern[offset] {
                matched = false
                break
            }
            if matched { return true }
            start += 1
        }
        return false
    }

    @inline(__always)
    static func asciiLower(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }
}
