import ArtCacheCore
import Foundation

/// How one output is encoded: the quality and the effort the encoder is
/// given. Both render paths honour it the same way (the fast path's libwebp
/// and libheif calls, libvips' `webpsave` and `heifsave`), so one setting
/// gives one kind of output whichever path renders it.
///
/// Not part of `VariantSpec` (whose `canonical` string names the variant on
/// disk): it is decided per render from the spec (``RenderPlan/encoderSetting(for:format:)``,
/// or the table a ``Renderer`` is given).
package struct EncoderSetting: Sendable, Equatable {
    /// 1...100, the encoder's own scale (libjpeg-turbo, libwebp, libheif).
    package var quality: Int
    /// What the encoder trades for speed, in its own terms:
    /// - WebP: libwebp's `method`, 0 (fastest) ... 6 (smallest); libvips'
    ///   `webpsave` `effort` is the same number.
    /// - AVIF: libaom's `speed`, 0 (slowest, smallest) ... 9 (fastest);
    ///   libvips' `heifsave` `effort` is `9 - speed`.
    /// - JPEG XL: libjxl's effort, 1 (fastest) ... 9; libvips' `jxlsave` `effort`.
    /// - JPEG, PNG: unused.
    package var effort: Int
    /// JPEG only: an output whose longer side is at least this is progressive
    /// (SOF2), a smaller one baseline (`[thumbnails] progressive_from`; the
    /// renderer sets it from its settings). `Int.max`: always baseline.
    package var progressiveFrom: Int

    package init(quality: Int, effort: Int, progressiveFrom: Int = .max) {
        self.quality = quality
        self.effort = effort
        self.progressiveFrom = progressiveFrom
    }

    /// Whether a JPEG output of this size is progressive.
    package func isProgressive(width: Int, height: Int) -> Bool {
        max(width, height) >= progressiveFrom
    }

    /// libwebp's default method, and libvips' `webpsave` default effort.
    package static let defaultWebPMethod = 4
    /// libvips' `heifsave` default effort (4) as libaom's speed: what AVIF
    /// outputs were encoded with before the fast path made them.
    package static let defaultAVIFSpeed = 5
    /// libvips' `jxlsave` default effort.
    package static let defaultJXLEffort = 7

    /// The range `effort` is clamped to for `format`.
    package static func effortRange(_ format: VariantSpec.Format) -> ClosedRange<Int> {
        switch format {
        case .webp: 0...6
        case .avif: 0...9
        case .jxl: 1...9
        case .auto, .jpeg, .png: 0...0
        }
    }

    /// `effort` as libvips' saver option of the same name (`webpsave`:
    /// the method; `heifsave`: `9 - speed`; `jxlsave`: libjxl's effort),
    /// clamped to its range.
    package func vipsEffort(_ format: VariantSpec.Format) -> Int {
        let effort = min(max(effort, Self.effortRange(format).lowerBound), Self.effortRange(format).upperBound)
        return format == .avif ? 9 - effort : effort
    }
}

extension RenderPlan {
    /// Today's encoding of `spec` written as `format` (never `.auto`): its
    /// quality, WebP method 4, AVIF speed 5 (libvips' defaults). A renderer
    /// given a calibrated table uses that instead.
    package static func encoderSetting(for spec: VariantSpec, format: VariantSpec.Format) -> EncoderSetting {
        let effort = switch format {
        case .webp: EncoderSetting.defaultWebPMethod
        case .avif: EncoderSetting.defaultAVIFSpeed
        case .jxl: EncoderSetting.defaultJXLEffort
        case .auto, .jpeg, .png: 0
        }
        return EncoderSetting(quality: spec.quality, effort: effort)
    }
}

extension RenderPlan {
    /// The calibrated encoding of `spec` written as `format`: its quality is
    /// on the JPEG scale, so WebP and AVIF get the quality and effort that
    /// look as good (``QualityTable``, per size class of the spec's box), at
    /// `tier`'s effort (`.cold`: an answer waits for it; `.behind`: a format
    /// upgrade). JPEG and PNG: the spec's quality.
    package static func calibratedSetting(for spec: VariantSpec, format: VariantSpec.Format,
                                          tier: QualityTable.Tier) -> EncoderSetting {
        let codec: QualityTable.Codec
        switch format {
        case .webp: codec = .webp
        case .avif: codec = .avif
        case .jxl: codec = .jxl
        case .auto, .jpeg, .png: return EncoderSetting(quality: spec.quality, effort: 0)
        }
        let size = QualityTable.SizeClass(longEdge: max(spec.width, spec.height))
        return QualityTable.setting(codec, jpegQuality: spec.quality, size: size, tier: tier)
    }
}
