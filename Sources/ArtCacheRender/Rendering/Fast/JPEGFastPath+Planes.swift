import CTurboJPEG
import Foundation

/// The planes path: when every output is a 4:2:0 AVIF (quality below 90)
/// of a YCbCr JPEG, the JPEG's own Y, Cb and Cr planes are what the AV1
/// encoder takes (BT.601, full range: the same matrix and range), so they
/// go there without a trip through RGB: libjpeg-turbo decodes to planes (no
/// colour conversion or chroma upsampling), the ``Resampler`` takes Y to the
/// output size and Cb, Cr to half of it, each plane is turned upright and
/// centre-cropped (at an even offset, so chroma stays on its 2x2 blocks),
/// and ``AVIFEncoder`` gets the planes. Against the RGB steps (decode to
/// RGB, resample three channels, convert back to YCbCr) the steps before
/// the AV1 encode of a 600 → 300 px render took 0.8–1.0 ms less here
/// (2.9 → 2.1 ms from 4:2:0 JPEGs, 3.2 → 2.5 ms from 4:4:4; fastest of 8
/// passes over 30–60 photographs, one core; Benchmarks/RESULTS.md).
///
/// Only for subsamplings whose chroma planes are at least half the luma's
/// on each side (4:4:4, 4:2:2, 4:2:0, 4:4:0): the resampler only reduces.
/// Anything it cannot do (another subsampling, a chroma plane smaller than
/// an output needs) is left to the RGB steps, decided before decoding.
extension JPEGFastPath {
    /// Subsamplings with chroma planes at least half the luma's on each side.
    static let planeSubsamplings = Set([TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440].map { Int32($0.rawValue) })

    /// Whether these outputs are the planes path's, for a decode at `factor`
    /// (and a placeholder, when one is asked for).
    func takesPlanes(_ outputs: [Output], factor: (num: Int, denom: Int), placeholder: Bool) -> Bool {
        guard header.colorspace == Int32(TJCS_YCbCr.rawValue), Self.planeSubsamplings.contains(header.subsampling),
              !outputs.isEmpty, outputs.allSatisfy({ $0.format == .avif && $0.setting.quality < 90 }) else { return false }
        let luma = TurboJPEGDecoder.planeSize(header, factor: factor, component: 0)
        let chroma = TurboJPEGDecoder.planeSize(header, factor: factor, component: 1)
        let fits = outputs.allSatisfy { output in
            let stored = storedSize(output.spec, decoded: luma)
            return (stored.width + 1) / 2 <= chroma.width && (stored.height + 1) / 2 <= chroma.height
        }
        guard fits, placeholder else { return fits }
        let small = placeholderSize(decoded: luma)
        return small.width <= chroma.width && small.height <= chroma.height
    }

    /// Runs the planes path's steps; nil when TurboJPEG gives up on the
    /// bytes (libvips then renders them). Call only when ``takesPlanes(_:factor:placeholder:)``.
    func renderPlanes(_ data: Data, factor: (num: Int, denom: Int), outputs: [Output],
                      deadline: ContinuousClock.Instant,
                      placeholder: ((PlaceholderPixels) -> Void)?) throws(RenderError) -> [RenderedImage]? {
        let planes: (y: PixelBuffer, cb: PixelBuffer, cr: PixelBuffer)? = data.withUnsafeBytes {
            try? decoder.decodePlanes($0, factor: factor, header: header)
        }
        guard let planes else { return nil }
        try Self.check(deadline)
        // The placeholder from the first output's planes when they are at
        // least its size, else from the decode's (32 px from a 600 px 4:4:4
        // decode: 0.36 ms; from a 300 px output's planes: 0.06 ms).
        let placeholderBox = placeholderSize(decoded: (planes.y.width, planes.y.height))
        var pending = placeholder
        let orientation = metadata.orientation
        var rendered: [RenderedImage] = []
        for output in outputs {
            let stored = storedSize(output.spec, decoded: (planes.y.width, planes.y.height))
            let chroma = ((stored.width + 1) / 2, (stored.height + 1) / 2)
            let resized = (y: Resampler.resize(planes.y, width: stored.width, height: stored.height),
                           cb: Resampler.resize(planes.cb, width: chroma.0, height: chroma.1),
                           cr: Resampler.resize(planes.cr, width: chroma.0, height: chroma.1))
            if let give = pending, chroma.0 >= placeholderBox.width, chroma.1 >= placeholderBox.height {
                give(placeholderPixels(resized, size: placeholderBox))
                pending = nil
            }
            var y = resized.y.oriented(orientation)
            var cb = resized.cb.oriented(orientation)
            var cr = resized.cr.oriented(orientation)
            if let crop = RenderPlan.crop(width: y.width, height: y.height, spec: output.spec) {
                // Even offsets: each chroma sample stays on its 2x2 block.
                let left = ((y.width - crop.width) / 2) & ~1, top = ((y.height - crop.height) / 2) & ~1
                y = y.cropped(left: left, top: top, width: crop.width, height: crop.height)
                let side = ((crop.width + 1) / 2, (crop.height + 1) / 2)
                cb = cb.cropped(left: left / 2, top: top / 2, width: side.0, height: side.1)
                cr = cr.cropped(left: left / 2, top: top / 2, width: side.0, height: side.1)
            }
            try Self.check(deadline)
            let encoded: Data
            do {
                encoded = try AVIFEncoder.encode(y: y, cb: cb, cr: cr, quality: output.setting.quality, speed: output.setting.effort)
            } catch {
                throw RenderError(.encode, "\(error)")
            }
            rendered.append(RenderedImage(data: encoded, width: y.width, height: y.height, format: .avif, hasAlpha: false))
        }
        pending?(placeholderPixels(planes, size: placeholderBox))
        return rendered
    }

    /// The placeholder's pixels (`size`, as stored) from planes of the
    /// whole image, stored orientation: each resampled to the placeholder's
    /// size, converted to RGB (JPEG's BT.601 full range), turned upright.
    private func placeholderPixels(_ planes: (y: PixelBuffer, cb: PixelBuffer, cr: PixelBuffer),
                                   size: (width: Int, height: Int)) -> PlaceholderPixels {
        let y = Resampler.resize(planes.y, width: size.width, height: size.height)
        let cb = Resampler.resize(planes.cb, width: size.width, height: size.height)
        let cr = Resampler.resize(planes.cr, width: size.width, height: size.height)
        var rgb = PixelBuffer(width: size.width, height: size.height, channels: 3)
        for i in 0..<(size.width * size.height) {
            let l = Double(y.bytes[i]), u = Double(cb.bytes[i]) - 128, v = Double(cr.bytes[i]) - 128
            for (c, value) in [l + 1.402 * v, l - 0.344136 * u - 0.714136 * v, l + 1.772 * u].enumerated() {
                rgb.bytes[i * 3 + c] = UInt8(min(255, max(0, value.rounded())))
            }
        }
        let small = rgb.oriented(metadata.orientation)
        let upright = RenderPlan.upright(width: header.width, height: header.height, orientation: metadata.orientation)
        return PlaceholderPixels(width: small.width, height: small.height, rgba: small.rgba(),
                                 sourceWidth: upright.width, sourceHeight: upright.height)
    }
}
