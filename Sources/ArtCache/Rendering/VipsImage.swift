import CVipsShim
import Foundation

/// What libvips reads from an image's header, before any pixel is decoded.
public struct ImageHeader: Sendable, Equatable {
    public var width: Int
    /// Height of one page (frame).
    public var height: Int
    public var bands: Int
    /// Frames of an animation (GIF, WebP); 1 otherwise.
    public var frames: Int
    /// EXIF orientation, 1 when absent.
    public var orientation: Int
    public var hasAlpha: Bool
    public var hasEXIF: Bool
    public var hasICCProfile: Bool
    public var isSRGB: Bool
    /// The libvips loader, e.g. `VipsForeignLoadJpegBuffer`.
    public var loader: String

    /// width × height × frames.
    public var pixels: Int { width * height * frames }
}

/// One libvips image handle (a `cvips_image`: the header is read, pixels are
/// not decoded), released in `deinit`. Not Sendable: one render uses it on
/// one thread, from open to release.
final class VipsImage {
    private let handle: OpaquePointer
    /// The format sniffed from the bytes (once, here), for messages.
    let format: SniffedFormat

    /// Opens encoded bytes. libvips' error buffer is read and cleared right
    /// after a failure and turned into a typed error.
    init(_ data: Data) throws(RenderError) {
        // Only bytes that sniff as an image reach libvips' loader probing
        // (which can spin forever on a truncated gzip stream in 8.14).
        let sniffed = Sniffer.sniff(data).format
        guard sniffed.isImage else { throw RenderError(.unsupported, "\(sniffed.displayName): not an image we render") }
        var kind: Int32 = 0
        let opened = data.withUnsafeBytes { cvips_image_open($0.baseAddress, $0.count, &kind) }
        guard let opened else {
            throw RenderError(VipsImage.code(kind), VipsImage.describe(sniffed, kind: kind, detail: Renderer.takeError()))
        }
        handle = opened
        format = sniffed
    }

    deinit { cvips_image_free(handle) }

    var header: ImageHeader {
        var h = cvips_header_t()
        cvips_image_header(handle, &h)
        let loader = withUnsafeBytes(of: h.loader) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return ImageHeader(width: Int(h.width), height: Int(h.height), bands: Int(h.bands), frames: Int(h.pages),
                           orientation: Int(h.orientation), hasAlpha: h.has_alpha != 0, hasEXIF: h.has_exif != 0,
                           hasICCProfile: h.has_icc != 0, isSRGB: h.interpretation == cvips_interpretation_srgb(),
                           loader: loader)
    }

    /// Decodes and encodes the thumbnail (call only after checking limits).
    func render(_ options: inout cvips_render_options_t) throws(RenderError) -> RenderedImage {
        var result = cvips_render_result_t()
        var output: UnsafeMutableRawPointer?
        var length = 0
        let status = cvips_image_render(handle, &options, &output, &length, &result)
        guard status == Int32(CVIPS_OK), let output else {
            throw RenderError(VipsImage.code(status), VipsImage.describe(format, kind: status, detail: Renderer.takeError()))
        }
        defer { cvips_free(output) }
        let format: VariantSpec.Format = switch Int(result.format) {
        case CVIPS_FORMAT_WEBP: .webp
        case CVIPS_FORMAT_PNG: .png
        case CVIPS_FORMAT_AVIF: .avif
        default: .jpeg
        }
        return RenderedImage(data: Data(bytes: output, count: length), width: Int(result.width), height: Int(result.height),
                             format: format, hasAlpha: result.has_alpha != 0)
    }

    static func code(_ kind: Int32) -> RenderError.Code {
        switch kind {
        case Int32(CVIPS_UNSUPPORTED): .unsupported
        case Int32(CVIPS_TOO_LARGE): .tooLarge
        case Int32(CVIPS_ENCODE): .encode
        default: .decode
        }
    }

    static func describe(_ format: SniffedFormat, kind: Int32, detail: String) -> String {
        let what = code(kind) == .unsupported ? "not a format we render" : code(kind).rawValue.replacingOccurrences(of: "_", with: " ")
        return "\(format.displayName): \(what)" + (detail.isEmpty ? "" : ": \(detail)")
    }
}
