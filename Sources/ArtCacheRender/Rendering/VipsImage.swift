import ArtCacheCore
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
    fileprivate let handle: OpaquePointer
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

/// One render in steps (a `cvips_render`), freed in `deinit`. The steps
/// are libvips calls; what to call, with which sizes, is `RenderPlan`'s.
/// Each step first checks the render's deadline, and the steps that compute
/// pixels (`materialize`, `save`) are stopped by libvips' kill flag when it
/// passes (`.timedOut`). Not Sendable: used on one render thread.
final class VipsRender {
    private let handle: OpaquePointer
    /// A branch starts from its parent's image: the parent lives as long.
    private let parent: VipsRender?
    /// The opened image a thumbnail was made from (its bytes are read lazily).
    private var source: VipsImage?
    /// The sniffed format of the source, for messages.
    let format: SniffedFormat

    /// A render whose deadline is `timeout` seconds from now.
    init(timeout: TimeInterval, format: SniffedFormat) {
        handle = cvips_render_new(timeout)
        parent = nil
        self.format = format
    }

    private init(handle: OpaquePointer, parent: VipsRender) {
        self.handle = handle
        self.parent = parent
        format = parent.format
    }

    deinit { cvips_render_free(handle) }

    /// The decode from an opened image, into `width` x `height` (never enlarging).
    func thumbnail(_ image: VipsImage, width: Int, height: Int, centreCrop: Bool) throws(RenderError) {
        source = image
        try check(cvips_render_thumbnail(handle, image.handle, nil, 0, 0, Int32(width), Int32(height), crop(centreCrop)))
    }

    /// The decode straight from bytes a loader in `loaders` must claim. The
    /// bytes are read lazily, up to `save`: call every step inside the
    /// closure that lends them.
    func thumbnail(_ bytes: UnsafeRawBufferPointer, loaders: Int32, width: Int, height: Int,
                   centreCrop: Bool) throws(RenderError) {
        try check(cvips_render_thumbnail(handle, nil, bytes.baseAddress, bytes.count, loaders, Int32(width), Int32(height),
                                         crop(centreCrop)))
    }

    private func crop(_ centre: Bool) -> Int32 { Int32(centre ? CVIPS_CROP_CENTRE : CVIPS_CROP_NONE) }

    /// The current image's size (of one frame), alpha and frames.
    var info: (width: Int, height: Int, hasAlpha: Bool, frames: Int) {
        var info = cvips_render_info_t()
        cvips_render_info(handle, &info)
        return (Int(info.width), Int(info.height), info.has_alpha != 0, Int(info.pages))
    }

    /// Every frame of an animated GIF or WebP shrunk into `box`, each
    /// cropped at its centre to `output` where the box is larger (a cover
    /// fit); delays and loop count kept.
    func animation(_ bytes: UnsafeRawBufferPointer, loaders: Int32, box: (width: Int, height: Int),
                   output: (width: Int, height: Int)) throws(RenderError) {
        try check(cvips_render_animation(handle, bytes.baseAddress, bytes.count, loaders, Int32(box.width), Int32(box.height),
                                         Int32(output.width), Int32(output.height)))
    }

    func materialize() throws(RenderError) { try check(cvips_render_materialize(handle)) }

    /// A render that starts from this one's current image (one decode, several outputs).
    func branch() throws(RenderError) -> VipsRender {
        guard let branch = cvips_render_branch(handle) else { throw RenderError(.decode, VipsImage.describe(format, kind: Int32(CVIPS_DECODE))) }
        return VipsRender(handle: branch, parent: self)
    }

    func resize(_ scale: Double) throws(RenderError) { try check(cvips_render_resize(handle, scale)) }

    func crop(width: Int, height: Int, _ crop: RenderPlan.Crop) throws(RenderError) {
        let kind = crop == .attention ? CVIPS_CROP_ATTENTION : CVIPS_CROP_CENTRE
        try check(cvips_render_crop(handle, Int32(width), Int32(height), Int32(kind)))
    }

    /// To 8-bit sRGB, with the colours of a wide-gamut source kept: an
    /// embedded RGB profile other than sRGB (``ICCProfile/needsConversion(_:)``)
    /// is applied first, on the decoded (already shrunk) image. An sRGB or
    /// untagged image goes through no colour transform at all.
    func toSRGB() throws(RenderError) {
        if let profile = embeddedProfile, ICCProfile.needsConversion(profile) {
            try check(cvips_render_profile_to_srgb(handle))
        }
        try check(cvips_render_srgb(handle))
    }

    /// The current image's embedded ICC profile (nil: none).
    var embeddedProfile: [UInt8]? {
        var data: UnsafeRawPointer?
        var length = 0
        cvips_render_profile(handle, &data, &length)
        guard let data, length > 0 else { return nil }
        return Array(UnsafeRawBufferPointer(start: data, count: length))
    }

    /// Drops an alpha band that is opaque everywhere (every frame; libvips
    /// loads each GIF as RGBA): computes the image first. True when dropped.
    func dropOpaqueAlpha() throws(RenderError) -> Bool {
        var dropped: Int32 = 0
        try check(cvips_render_drop_opaque_alpha(handle, &dropped))
        return dropped != 0
    }

    func flatten(onto background: [Double]) throws(RenderError) {
        let rgb = Array((background + [255, 255, 255]).prefix(3))
        try check(rgb.withUnsafeBufferPointer { cvips_render_flatten(handle, $0.baseAddress) })
    }

    /// Computes and encodes the current image (`format` never `.auto`) with
    /// `setting`'s quality and effort (`webpsave`/`heifsave` `effort`; a JPEG
    /// is progressive when the setting says so for the current size).
    func save(_ format: VariantSpec.Format, _ setting: EncoderSetting) throws(RenderError) -> Data {
        var output: UnsafeMutableRawPointer?
        var length = 0
        let size = info
        let effort = format == .jpeg ? (setting.isProgressive(width: size.width, height: size.height) ? 1 : 0)
            : setting.vipsEffort(format)
        try check(cvips_render_save(handle, Int32(VipsImage.code(of: format)), Int32(setting.quality),
                                    Int32(effort), &output, &length))
        guard let output else { throw RenderError(.encode, VipsImage.describe(self.format, kind: Int32(CVIPS_ENCODE))) }
        defer { cvips_free(output) }
        return Data(bytes: output, count: length)
    }

    /// The current image's pixels as RGBA rows (8-bit sRGB: after `toSRGB`).
    func rgba() throws(RenderError) -> [UInt8] {
        var output: UnsafeMutableRawPointer?
        var length = 0
        try check(cvips_render_rgba(handle, &output, &length))
        guard let output else { throw RenderError(.decode, VipsImage.describe(format, kind: Int32(CVIPS_DECODE))) }
        defer { cvips_free(output) }
        return Array(UnsafeRawBufferPointer(start: output, count: length))
    }

    private func check(_ status: Int32) throws(RenderError) {
        guard status == Int32(CVIPS_OK) else { throw RenderError(VipsImage.code(status), VipsImage.describe(format, kind: status)) }
    }
}

extension VipsImage {
    /// The shim's code of an output format (`.auto` is resolved before: JPEG).
    static func code(of format: VariantSpec.Format) -> Int {
        switch format {
        case .auto, .jpeg: CVIPS_FORMAT_JPEG
        case .webp: CVIPS_FORMAT_WEBP
        case .png: CVIPS_FORMAT_PNG
        case .avif: CVIPS_FORMAT_AVIF
        case .jxl: CVIPS_FORMAT_JXL
        }
    }
}
