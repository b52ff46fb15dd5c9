import CHeif
import CHeifAOM
import CPixels
import Foundation

/// AVIF from pixels with libheif and libaom directly (libaom through our
/// own libheif plugin, which keeps its encoders: ``pooledEncoder``): what
/// libvips' `heifsave` does for an 8-bit sRGB image (quality, libaom `speed`,
/// chroma 4:2:0 below quality 90 and 4:4:4 from it, as its `subsample_mode`
/// auto), on one thread, without its per-call machinery, which at artwork
/// sizes cost more than the encode; at speed 9 without trellis quantisation
/// (``aomOptions(speed:)``). No metadata. Grey pixels are widened to RGB;
/// RGBA keeps its alpha (an auxiliary alpha image). At 4:2:0 libheif gets YCbCr planes:
/// converted here from RGB, or a JPEG's own (``encode(y:cb:cr:quality:speed:)``).
///
/// Every libheif object is freed on every path (a `defer` right after it is
/// made, or, for an image, by the helper that made it when filling it
/// fails); errors carry libheif's own message, copied from the call's result
/// at once (per context, never a buffer shared between threads).
enum AVIFEncoder {
    /// `quality` 1...100, `speed` 0 (slowest, smallest) ... 9 (fastest), both
    /// clamped; `aomOptions` replaces ``aomOptions(speed:)``, and `stock`
    /// uses libheif's own aom plugin instead of ``pooledEncoder`` (tests).
    static func encode(_ pixels: PixelBuffer, quality: Int, speed: Int,
                       aomOptions: [(String, String)]? = nil, stock: Bool = false) throws(EncoderError) -> Data {
        _ = started
        let source = pixels.colour
        guard source.width >= 1, source.height >= 1 else { throw EncoderError("libheif", "no pixels to encode") }
        let quality = min(max(quality, 1), 100)

        let chroma420 = quality < 90 && !source.hasAlpha
        let image = try chroma420 ? planes420(source) : interleaved(source)
        defer { heif_image_release(image) }
        return try encode(image, width: source.width, height: source.height, quality: quality, speed: speed,
                          aomOptions: aomOptions, stock: stock)
    }

    /// 4:2:0 AVIF from YCbCr planes as a JPEG stores them (BT.601, full
    /// range): `y` at the image's size, `cb` and `cr` at (width + 1) / 2 x
    /// (height + 1) / 2; one channel each. `quality` 1...89 (4:2:0 is below
    /// 90), `speed` 0...9, both clamped.
    static func encode(y: PixelBuffer, cb: PixelBuffer, cr: PixelBuffer, quality: Int, speed: Int) throws(EncoderError) -> Data {
        _ = started
        let chroma = ((y.width + 1) / 2, (y.height + 1) / 2)
        guard y.width >= 1, y.height >= 1, [y.channels, cb.channels, cr.channels] == [1, 1, 1],
              (cb.width, cb.height) == chroma, (cr.width, cr.height) == chroma else {
            throw EncoderError("libheif", "planes \(y.width)x\(y.height), \(cb.width)x\(cb.height), \(cr.width)x\(cr.height) are not 4:2:0")
        }
        let image = try ycbcr420(width: y.width, height: y.height) { planes in
            for (plane, (pointer, stride)) in zip([y, cb, cr], planes) {
                plane.bytes.withUnsafeBufferPointer { bytes in
                    for row in 0..<plane.height {
                        (pointer + row * stride).update(from: bytes.baseAddress! + row * plane.width, count: plane.width)
                    }
                }
            }
        }
        defer { heif_image_release(image) }
        return try encode(image, width: y.width, height: y.height, quality: min(max(quality, 1), 89), speed: speed,
                          aomOptions: nil)
    }

    /// libaom options past libheif's own (its `aom:` parameters), by speed.
    /// At speed 9 (the cold effort: an answer waits) trellis quantisation is
    /// off: its rate-distortion pass over each block's coefficients was 17%
    /// of a 300 px photograph's encode here, for 3% fewer bytes at the same
    /// quality setting, which is 1% at the same SSIMULACRA (the table in
    /// `QualityTable` is measured with this option: Benchmarks/quality).
    /// Slower speeds (an upgrade behind the answer: bytes matter) keep it.
    static func aomOptions(speed: Int) -> [(String, String)] {
        speed >= 9 ? [("disable-trellis-quant", "1")] : []
    }

    /// Encodes a libheif image made here, and writes the file; `aomOptions`
    /// nil: ``aomOptions(speed:)``.
    private static func encode(_ image: OpaquePointer, width: Int, height: Int, quality: Int,
                               speed: Int, aomOptions: [(String, String)]?, stock: Bool = false) throws(EncoderError) -> Data {
        guard let context = heif_context_alloc() else { throw EncoderError("libheif", "cannot allocate a context") }
        defer { heif_context_free(context) }

        var encoder: OpaquePointer?
        if let pooled = Self.pooledEncoder, stock == false {
            try check(heif_context_get_encoder(context, pooled, &encoder), "artcache-aom encoder")
        } else {
            try check(heif_context_get_encoder_for_format(context, heif_compression_AV1, &encoder), "no AV1 encoder")
        }
        guard let encoder else { throw EncoderError("libheif", "no AV1 encoder") }
        defer { heif_encoder_release(encoder) }
        try check(heif_encoder_set_lossy_quality(encoder, Int32(quality)), "quality \(quality)")
        try check(heif_encoder_set_lossless(encoder, 0), "lossless off")
        try check(heif_encoder_set_parameter_integer(encoder, "speed", Int32(min(max(speed, 0), 9))), "speed \(speed)")
        try check(heif_encoder_set_parameter_string(encoder, "chroma", quality >= 90 ? "444" : "420"), "chroma")
        // One thread: a render thread is one core's share (libaom's default
        // of 4 threads cost 25–30% more CPU per thumbnail at 100–300 px here).
        try check(heif_encoder_set_parameter_integer(encoder, "threads", 1), "threads")
        for (name, value) in aomOptions ?? Self.aomOptions(speed: speed) {
            try check(heif_encoder_set_parameter_string(encoder, "aom:" + name, value), "aom \(name)=\(value)")
        }

        try check(heif_context_encode_image(context, image, encoder, nil, nil), "encode \(width)x\(height)")

        let sink = Sink()
        var writer = heif_writer(writer_api_version: 1, write: { _, bytes, count, userdata in
            let sink = Unmanaged<Sink>.fromOpaque(userdata!).takeUnretainedValue()
            if let bytes, count > 0 { sink.data.append(bytes.assumingMemoryBound(to: UInt8.self), count: count) }
            // libheif may read the message: a static string.
            let success: StaticString = "Success"
            return heif_error(code: heif_error_Ok, subcode: heif_suberror_Unspecified,
                              message: UnsafeRawPointer(success.utf8Start).assumingMemoryBound(to: CChar.self))
        })
        try withExtendedLifetime(sink) { () throws(EncoderError) in
            try check(heif_context_write(context, &writer, Unmanaged.passUnretained(sink).toOpaque()), "write")
        }
        guard !sink.data.isEmpty else { throw EncoderError("libheif", "wrote nothing") }
        return sink.data
    }

    /// RGB or RGBA pixels as one interleaved plane: libheif converts them
    /// to YCbCr itself (used for 4:4:4 and for alpha).
    private static func interleaved(_ source: PixelBuffer) throws(EncoderError) -> OpaquePointer {
        var made: OpaquePointer?
        try check(heif_image_create(Int32(source.width), Int32(source.height), heif_colorspace_RGB,
                                    source.hasAlpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, &made),
                  "heif_image_create")
        guard let image = made else { throw EncoderError("libheif", "heif_image_create gave no image") }
        do throws(EncoderError) {
            try check(heif_image_add_plane(image, heif_channel_interleaved, Int32(source.width), Int32(source.height), 8),
                      "heif_image_add_plane")
            var stride: Int32 = 0
            guard let plane = heif_image_get_plane(image, heif_channel_interleaved, &stride), Int(stride) >= source.rowBytes else {
                throw EncoderError("libheif", "no interleaved plane for \(source.width)x\(source.height)")
            }
            source.bytes.withUnsafeBufferPointer { bytes in
                for row in 0..<source.height {
                    (plane + row * Int(stride)).update(from: bytes.baseAddress! + row * source.rowBytes, count: source.rowBytes)
                }
            }
            return image
        } catch {
            heif_image_release(image)
            throw error
        }
    }

    /// RGB pixels as the YCbCr 4:2:0 planes the AV1 encoder takes, converted
    /// here (`cpix_rgb_to_ycbcr420`: BT.601, full range, each chroma sample
    /// the mean of its 2x2 block) and tagged as such (`colr` nclx: matrix 6,
    /// full range; primaries and transfer unspecified, as libheif tags the
    /// images it converts). libheif's own RGB conversion cost ~0.55 ms of a
    /// 300 px encode (~4.4 ms) here, for the same bytes and quality
    /// (Benchmarks/RESULTS.md).
    private static func planes420(_ source: PixelBuffer) throws(EncoderError) -> OpaquePointer {
        precondition(source.channels == 3, "RGB")
        return try ycbcr420(width: source.width, height: source.height) { planes in
            source.bytes.withUnsafeBufferPointer { rgb in
                cpix_rgb_to_ycbcr420(rgb.baseAddress, Int32(source.width), Int32(source.height),
                                     planes[0].0, Int32(planes[0].1), planes[1].0, Int32(planes[1].1), planes[2].0, Int32(planes[2].1))
            }
        }
    }

    /// A YCbCr 4:2:0 libheif image tagged BT.601 full range (`colr` nclx:
    /// matrix 6, full range; primaries and transfer unspecified, as libheif
    /// tags the images it converts), its Y, Cb and Cr planes (pointer,
    /// stride) filled by `fill`.
    private static func ycbcr420(width: Int, height: Int,
                                 fill: ([(UnsafeMutablePointer<UInt8>, Int)]) -> Void) throws(EncoderError) -> OpaquePointer {
        let w = Int32(width), h = Int32(height)
        let chromaWidth = (w + 1) / 2, chromaHeight = (h + 1) / 2
        var made: OpaquePointer?
        try check(heif_image_create(w, h, heif_colorspace_YCbCr, heif_chroma_420, &made), "heif_image_create")
        guard let image = made else { throw EncoderError("libheif", "heif_image_create gave no image") }
        do throws(EncoderError) {
            try check(heif_image_add_plane(image, heif_channel_Y, w, h, 8), "heif_image_add_plane Y")
            try check(heif_image_add_plane(image, heif_channel_Cb, chromaWidth, chromaHeight, 8), "heif_image_add_plane Cb")
            try check(heif_image_add_plane(image, heif_channel_Cr, chromaWidth, chromaHeight, 8), "heif_image_add_plane Cr")
            guard let nclx = heif_nclx_color_profile_alloc() else { throw EncoderError("libheif", "cannot allocate an nclx profile") }
            defer { heif_nclx_color_profile_free(nclx) }
            nclx.pointee.color_primaries = heif_color_primaries_unspecified
            nclx.pointee.transfer_characteristics = heif_transfer_characteristic_unspecified
            nclx.pointee.matrix_coefficients = heif_matrix_coefficients_ITU_R_BT_601_6
            nclx.pointee.full_range_flag = 1
            try check(heif_image_set_nclx_color_profile(image, nclx), "nclx")
            var yStride: Int32 = 0, cbStride: Int32 = 0, crStride: Int32 = 0
            guard let y = heif_image_get_plane(image, heif_channel_Y, &yStride),
                  let cb = heif_image_get_plane(image, heif_channel_Cb, &cbStride),
                  let cr = heif_image_get_plane(image, heif_channel_Cr, &crStride),
                  yStride >= w, cbStride >= chromaWidth, crStride >= chromaWidth else {
                throw EncoderError("libheif", "no YCbCr planes for \(width)x\(height)")
            }
            fill([(y, Int(yStride)), (cb, Int(cbStride)), (cr, Int(crStride))])
            return image
        } catch {
            heif_image_release(image)
            throw error
        }
    }

    /// The bytes `heif_context_write` hands over, in order (one encode, one thread).
    private final class Sink {
        var data = Data()
    }

    /// libheif started once per process (its plugins registered, and
    /// ours); never stopped: encodes may run on any render thread until exit.
    private static let started: Void = {
        _ = heif_init(nil)
        _ = cheif_aom_register()
    }()

    /// The "artcache-aom" plugin (`Sources/CHeifAOM`): libaom encoders kept
    /// between images of the same size and settings, the same bytes as
    /// libheif's own aom plugin (`stock`, which makes and frees an encoder
    /// per image: 6% of a cold browser round's CPU at thumbnail sizes). nil
    /// if libheif did not take it: then libheif's own.
    // nonisolated(unsafe): a pointer to libheif's descriptor of a plugin
    // registered once and never removed; libheif only reads it.
    nonisolated(unsafe) static let pooledEncoder: OpaquePointer? = {
        _ = started
        var descriptor: OpaquePointer?
        guard heif_get_encoder_descriptors(heif_compression_AV1, cheif_aom_id(), &descriptor, 1) == 1 else { return nil }
        return descriptor
    }()

    private static func check(_ error: heif_error, _ step: String) throws(EncoderError) {
        guard error.code != heif_error_Ok else { return }
        let message = error.message.map { String(cString: $0) } ?? "error \(error.code.rawValue).\(error.subcode.rawValue)"
        throw EncoderError("libheif", "\(step): \(message)")
    }
}
