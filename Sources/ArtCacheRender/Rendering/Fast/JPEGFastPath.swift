import ArtCacheCore
import CTurboJPEG
import CVipsShim
import Foundation

/// The common artwork case at the codec's speed: a JPEG (YCbCr, RGB or
/// grey; no ICC profile, or an sRGB one; any EXIF orientation) to JPEG,
/// WebP or AVIF thumbnails that `contain` or `cover`. libjpeg-turbo decodes
/// with its DCT scaled to the smallest size at least ``decodeMargin`` × the
/// largest output, a Lanczos-3 ``Resampler`` takes it to each output size,
/// the pixels are turned upright and centre-cropped, and libjpeg-turbo,
/// libwebp (``WebPEncoder``) or libheif (``AVIFEncoder``) encodes, with the
/// quality and effort of each output's ``EncoderSetting``.
/// Several outputs share the one decode. When every output is a 4:2:0
/// AVIF, the JPEG's YCbCr planes go to the encoder without a trip through
/// RGB (``renderPlanes(_:factor:outputs:deadline:placeholder:)``).
///
/// Everything else — other formats, CMYK, other ICC profiles, `smart`
/// crops, PNG output, a file TurboJPEG warns about — is
/// libvips' (``plan(_:specs:maxSourcePixels:)`` returns nil, or the decode
/// step does, and the caller renders with libvips, which decides).
///
/// imgproxy's shape: the work is a list of steps, the deadline checked
/// between them (each step is milliseconds on artwork; a source has passed
/// the pixel limit before any).
package struct JPEGFastPath {
    /// The decode is at least this many times the largest output on each
    /// side, then Lanczos-3 reduces it. Measured against libvips' own
    /// thumbnail (mean difference, 600→100 cover, Q80): 1.5 gives ≈1.2/255
    /// on photographs and ≈3.4 on zone plates (Pillow's draft() ≈1.0 and
    /// 3.4; Benchmarks/RESULTS.md); 1 gave 5.4 and 8.5 in FastJPEGTests (the
    /// DCT scaling alone aliases); 2 costs a larger decode for no visible gain.
    package static let decodeMargin = 1.5

    let metadata: JPEGMetadata
    let header: TurboJPEGDecoder.Header
    let decoder: TurboJPEGDecoder
    let specs: [VariantSpec]

    /// Whether these outputs are the fast path's at all (before reading the bytes).
    package static func handles(_ format: SniffedFormat, specs: [VariantSpec]) -> Bool {
        format == .jpeg && !specs.isEmpty && specs.allSatisfy { $0.fit != .smart && [.jpeg, .auto, .webp, .avif].contains($0.format) }
    }

    /// The plan for `data`, or nil when libvips is to render it.
    package static func plan(_ data: Data, specs: [VariantSpec], maxSourcePixels: Int) -> JPEGFastPath? {
        guard let metadata = JPEGMetadata(data), !metadata.hasProfile || metadata.profileIsSRGB,
              let decoder = try? TurboJPEGDecoder() else { return nil }
        let header: TurboJPEGDecoder.Header? = data.withUnsafeBytes { try? decoder.header($0) }
        guard let header, header.width >= 1, header.height >= 1, header.width * header.height <= maxSourcePixels,
              [TJCS_YCbCr, TJCS_GRAY, TJCS_RGB].map({ Int32($0.rawValue) }).contains(header.colorspace) else { return nil }
        return JPEGFastPath(metadata: metadata, header: header, decoder: decoder, specs: specs)
    }

    /// The DCT scale: the smallest of 1/8, 1/4, 1/2 whose decode is at
    /// least `margin` × `box` on each side, else the full size. (libjpeg-turbo
    /// has SIMD code for those scales only: a 3/8 decode measured slower than
    /// a 4/8 one.)
    package static func factor(width: Int, height: Int, box: (width: Int, height: Int),
                               margin: Double = decodeMargin) -> (num: Int, denom: Int) {
        let needed = (min(width, Int((Double(box.width) * margin).rounded(.up))),
                      min(height, Int((Double(box.height) * margin).rounded(.up))))
        return [(1, 8), (1, 4), (1, 2)].first {
            TurboJPEGDecoder.scaled(width, $0) >= needed.0 && TurboJPEGDecoder.scaled(height, $0) >= needed.1
        } ?? (1, 1)
    }

    /// One output of a render: its spec, the format written (WebP and AVIF
    /// as asked, JPEG for everything else the fast path takes) and that
    /// format's encoder setting.
    struct Output {
        let spec: VariantSpec
        let format: VariantSpec.Format
        let setting: EncoderSetting
    }

    /// The outputs of `specs`, each with its setting from `encoding`.
    static func outputs(_ specs: [VariantSpec],
                        encoding: (VariantSpec, VariantSpec.Format) -> EncoderSetting) -> [Output] {
        specs.map { spec in
            let format: VariantSpec.Format = [.webp, .avif].contains(spec.format) ? spec.format : .jpeg
            return Output(spec: spec, format: format, setting: encoding(spec, format))
        }
    }

    /// The DCT scale of this plan's decode: the smallest that every output
    /// can be made from (``factor(width:height:box:margin:)``).
    var decodeFactor: (num: Int, denom: Int) {
        let upright = RenderPlan.upright(width: header.width, height: header.height, orientation: metadata.orientation)
        let box = RenderPlan.decodeBox(width: upright.width, height: upright.height, specs: specs)
        let storedBox = metadata.orientation >= 5 ? (box.height, box.width) : (box.width, box.height)
        return Self.factor(width: header.width, height: header.height, box: storedBox)
    }

    /// The size an output is resampled to from a decode of `decoded`, as
    /// stored (before orientation; never larger than the decode).
    func storedSize(_ spec: VariantSpec, decoded: (width: Int, height: Int)) -> (width: Int, height: Int) {
        let upright = RenderPlan.upright(width: header.width, height: header.height, orientation: metadata.orientation)
        let scale = RenderPlan.scale(width: upright.width, height: upright.height, into: spec)
        let size = (width: max(1, Int((Double(upright.width) * scale).rounded())),
                    height: max(1, Int((Double(upright.height) * scale).rounded())))
        let stored = metadata.orientation >= 5 ? (size.height, size.width) : (size.width, size.height)
        return (min(stored.0, decoded.width), min(stored.1, decoded.height))
    }

    /// Runs the steps; nil when TurboJPEG gives up on the bytes (libvips then
    /// renders them). Throws `timedOut` past `deadline`, `encode` when the
    /// encoder fails.
    /// `placeholder`: given the placeholder's pixels, from the same decode.
    /// `encoding`: the quality and effort of each output in its format.
    func render(_ data: Data, deadline: ContinuousClock.Instant,
                encoding: (VariantSpec, VariantSpec.Format) -> EncoderSetting = RenderPlan.encoderSetting,
                placeholder: ((PlaceholderPixels) -> Void)? = nil) throws(RenderError) -> [RenderedImage]? {
        let orientation = metadata.orientation
        let factor = decodeFactor
        let outputs = Self.outputs(specs, encoding: encoding)
        if takesPlanes(outputs, factor: factor, placeholder: placeholder != nil) {
            return try renderPlanes(data, factor: factor, outputs: outputs, deadline: deadline, placeholder: placeholder)
        }
        let channels = header.colorspace == Int32(TJCS_GRAY.rawValue) ? 1 : 3
        let decoded: PixelBuffer? = data.withUnsafeBytes {
            try? decoder.decode($0, factor: factor, channels: channels, header: header)
        }
        guard let decoded else { return nil }
        try Self.check(deadline)
        placeholder?(placeholderPixels(from: decoded))
        let encoder: TurboJPEGEncoder
        do { encoder = try TurboJPEGEncoder() } catch { throw RenderError(.encode, error.description) }
        var rendered: [RenderedImage] = []
        for output in outputs {
            let (spec, format, setting) = (output.spec, output.format, output.setting)
            let stored = storedSize(spec, decoded: (decoded.width, decoded.height))
            var pixels = Resampler.resize(decoded, width: stored.width, height: stored.height)
            pixels = pixels.oriented(orientation)
            if let crop = RenderPlan.crop(width: pixels.width, height: pixels.height, spec: spec) {
                pixels = pixels.cropped(left: (pixels.width - crop.width) / 2, top: (pixels.height - crop.height) / 2,
                                        width: crop.width, height: crop.height)
            }
            try Self.check(deadline)
            let encoded: Data
            do {
                encoded = switch format {
                case .webp: try WebPEncoder.encode(pixels, quality: setting.quality, method: setting.effort)
                case .avif: try AVIFEncoder.encode(pixels, quality: setting.quality, speed: setting.effort)
                default: try encoder.encode(pixels, quality: setting.quality,
                                            progressive: setting.isProgressive(width: pixels.width, height: pixels.height))
                }
            } catch {
                throw RenderError(.encode, "\(error)")
            }
            rendered.append(RenderedImage(data: encoded, width: pixels.width, height: pixels.height, format: format, hasAlpha: false))
        }
        return rendered
    }

    static func check(_ deadline: ContinuousClock.Instant) throws(RenderError) {
        guard ContinuousClock.now < deadline else {
            throw RenderError(.timedOut, VipsImage.describe(.jpeg, kind: Int32(CVIPS_TIMEOUT)))
        }
    }
}
