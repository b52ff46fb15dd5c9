@_spi(Benchmarks) import ArtCacheCore
import CVipsShim
import Foundation

/// What libvips reads from an image's header, before any pixel is decoded.
package struct ImageHeader: Sendable, Equatable {
    package var width: Int
    /// Height of one page (frame).
    package var height: Int
    package var bands: Int
    /// Frames of an animation (GIF, WebP); 1 otherwise.
    package var frames: Int
    /// EXIF orientation, 1 when absent.
    package var orientation: Int
    package var hasAlpha: Bool
    package var hasEXIF: Bool
    package var hasICCProfile: Bool
    package var isSRGB: Bool
    /// The libvips loader, e.g. `VipsForeignLoadJpegBuffer`.
    package var loader: String

    /// width × height × frames.
    package var pixels: Int { width * height * frames }
}

/// One libvips image handle (a `cvips_image`: the header is read, pixels are
/// not decoded), released in `deinit`. Not Sendable: one render uses it on
/// one thread, from open to release.
final class VipsImage {
    private let handle: OpaquePointer
    /// The format sniffed from the bytes (once, here), for messages.
    let format: SniffedFormat

    /// Opens encoded bytes already sniffed as `format`, letting only the
    /// `loaders` (a `CVIPS_LOADER_*` mask) decode them. The error's code comes
    /// from the shim's return value, never from libvips' error text (one
    /// buffer per process, overwritten by parallel renders).
    init(_ data: Data, format sniffed: SniffedFormat, loaders: Int32) throws(RenderError) {
        var kind: Int32 = 0
        let opened = data.withUnsafeBytes { cvips_image_open($0.baseAddress, $0.count, loaders, &kind) }
        guard let opened else {
            throw RenderError(VipsImage.code(kind), VipsImage.describe(sniffed, kind: kind))
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
            throw RenderError(VipsImage.code(status), VipsImage.describe(format, kind: status))
        }
        defer { cvips_free(output) }
        return Self.rendered(output, length, result)
    }

    /// Renders encoded bytes without opening them first (the caller checked
    /// the limits from its own header read): the bytes are borrowed for the call.
    static func render(_ data: Data, format sniffed: SniffedFormat, loaders: Int32,
                       options: inout cvips_render_options_t) throws(RenderError) -> RenderedImage {
        var result = cvips_render_result_t()
        var output: UnsafeMutableRawPointer?
        var length = 0
        let status = withUnsafePointer(to: &options) { options in
            data.withUnsafeBytes { cvips_render_buffer($0.baseAddress, $0.count, loaders, options, &output, &length, &result) }
        }
        guard status == Int32(CVIPS_OK), let output else {
            throw RenderError(code(status), describe(sniffed, kind: status))
        }
        defer { cvips_free(output) }
        return rendered(output, length, result)
    }

    /// Several outputs from one decode (call only after checking limits).
    /// The first output that failed throws; the others' buffers are freed.
    func render(_ options: [cvips_render_options_t]) throws(RenderError) -> [RenderedImage] {
        let count = options.count
        var outputs = [UnsafeMutableRawPointer?](repeating: nil, count: count)
        var lengths = [Int](repeating: 0, count: count)
        var results = [cvips_render_result_t](repeating: cvips_render_result_t(), count: count)
        var statuses = [Int32](repeating: 0, count: count)
        let status = cvips_image_render_many(handle, options, Int32(count), &outputs, &lengths, &results, &statuses)
        defer { outputs.forEach { $0.map(cvips_free) } }
        guard status == Int32(CVIPS_OK) else {
            throw RenderError(VipsImage.code(status), VipsImage.describe(format, kind: status))
        }
        var rendered: [RenderedImage] = []
        for index in 0..<count {
            guard statuses[index] == Int32(CVIPS_OK), let output = outputs[index] else {
                throw RenderError(VipsImage.code(statuses[index]), VipsImage.describe(format, kind: statuses[index]))
            }
            rendered.append(Self.rendered(output, lengths[index], results[index]))
        }
        return rendered
    }

    private static func rendered(_ output: UnsafeMutableRawPointer, _ length: Int, _ result: cvips_render_result_t) -> RenderedImage {
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
        case Int32(CVIPS_TIMEOUT): .timedOut
        default: .decode
        }
    }

    static func describe(_ format: SniffedFormat, kind: Int32) -> String {
        let what = switch code(kind) {
        case .unsupported: "not a format we render (no allowed loader claims these bytes)"
        case .tooLarge: "too large"
        case .decode: "cannot decode (corrupt or truncated)"
        case .encode: "cannot encode the output"
        case .timedOut: "render stopped: it took longer than thumbnails.render_timeout"
        }
        return "\(format.displayName): \(what)"
    }
}
