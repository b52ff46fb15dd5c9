import ArtCacheCore
import CTurboJPEG
import Foundation

extension JPEGFastPath {
    /// The placeholder's pixels of a JPEG the fast path takes (see
    /// ``plan(_:specs:maxSourcePixels:)``), at the codec's speed: the
    /// smallest DCT-scaled decode at least ``Renderer/placeholderSide`` on
    /// its longer side (1/8 of a 600×600 artwork: 75×75), then
    /// ``placeholderPixels(from:)``. Nil when libvips is to decode it (the
    /// caller then does).
    static func placeholderPixels(_ data: Data, maxSourcePixels: Int,
                                  deadline: ContinuousClock.Instant) throws(RenderError) -> PlaceholderPixels? {
        let side = Renderer.placeholderSide
        let probe = VariantSpec(width: side, height: side, fit: .contain, format: .jpeg, quality: 80)
        guard let plan = plan(data, specs: [probe], maxSourcePixels: maxSourcePixels) else { return nil }
        let header = plan.header
        let longer = max(header.width, header.height)
        let factor = [(1, 8), (1, 4), (1, 2)].first { TurboJPEGDecoder.scaled(longer, $0) >= side } ?? (1, 1)
        let channels = header.colorspace == Int32(TJCS_GRAY.rawValue) ? 1 : 3
        let decoded: PixelBuffer? = data.withUnsafeBytes {
            try? plan.decoder.decode($0, factor: factor, channels: channels, header: header)
        }
        guard let decoded else { return nil }
        try check(deadline)
        return plan.placeholderPixels(from: decoded)
    }

    /// A decode of this plan's JPEG (any DCT scale) reduced to the
    /// placeholder's pixels: Lanczos-3 to 32 px on the longer side, turned
    /// upright, RGBA; with the upright size of the source. A render's own
    /// decode gives them for ~50 µs (no second decode).
    func placeholderPixels(from decoded: PixelBuffer) -> PlaceholderPixels {
        let size = placeholderSize(decoded: (decoded.width, decoded.height))
        let small = Resampler.resize(decoded, width: size.width, height: size.height).oriented(metadata.orientation)
        let upright = RenderPlan.upright(width: header.width, height: header.height, orientation: metadata.orientation)
        return PlaceholderPixels(width: small.width, height: small.height, rgba: small.rgba(),
                                 sourceWidth: upright.width, sourceHeight: upright.height)
    }

    /// The placeholder's size from a decode of `decoded`: 32 px
    /// (``Renderer/placeholderSide``) on the longer side, never larger.
    func placeholderSize(decoded: (width: Int, height: Int)) -> (width: Int, height: Int) {
        let side = Double(Renderer.placeholderSide)
        let scale = min(1, side / Double(max(decoded.width, decoded.height)))
        return (max(1, Int((Double(decoded.width) * scale).rounded())), max(1, Int((Double(decoded.height) * scale).rounded())))
    }
}

/// What a placeholder is computed from: ≤ 32×32 RGBA, and the size of the
/// image it stands for.
struct PlaceholderPixels {
    let width: Int
    let height: Int
    let rgba: [UInt8]
    let sourceWidth: Int
    let sourceHeight: Int

    func intrinsics() throws(RenderError) -> Intrinsics {
        do {
            return Intrinsics(width: sourceWidth, height: sourceHeight,
                              placeholder: try Placeholder(width: width, height: height, rgba: rgba))
        } catch {
            throw RenderError(.decode, "no placeholder for a \(width)x\(height) decode: \(error)")
        }
    }
}

extension PixelBuffer {
    /// The pixels as RGBA, opaque (grey or RGB in, as TurboJPEG decodes).
    func rgba() -> [UInt8] {
        var out = [UInt8](repeating: 255, count: width * height * 4)
        for pixel in 0..<(width * height) {
            for channel in 0..<3 { out[pixel * 4 + channel] = bytes[pixel * channels + (channels == 1 ? 0 : channel)] }
        }
        return out
    }
}
