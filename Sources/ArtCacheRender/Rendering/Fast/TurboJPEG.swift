import CTurboJPEG
import Foundation

/// Pixels in memory: 8-bit, interleaved, `channels` 1 (grey) or 3 (RGB),
/// rows of `width * channels` bytes. (The WebP and AVIF encoders also take
/// 2 and 4: grey and RGB with alpha last.)
package struct PixelBuffer: Sendable {
    package var width: Int
    package var height: Int
    package var channels: Int
    package var bytes: [UInt8]

    package init(width: Int, height: Int, channels: Int, bytes: [UInt8]) {
        precondition(bytes.count == width * height * channels, "pixel buffer size")
        self.width = width
        self.height = height
        self.channels = channels
        self.bytes = bytes
    }

    package init(width: Int, height: Int, channels: Int) {
        self.init(width: width, height: height, channels: channels,
                  bytes: [UInt8](repeating: 0, count: width * height * channels))
    }

    /// Pixels that `fill` writes, every byte (not zeroed first).
    static func filled(width: Int, height: Int, channels: Int, _ fill: (UnsafeMutableBufferPointer<UInt8>) -> Bool) -> PixelBuffer? {
        var filled = false
        let bytes = [UInt8](unsafeUninitializedCapacity: width * height * channels) { buffer, count in
            filled = fill(buffer)
            if !filled { buffer.initialize(repeating: 0) }
            count = buffer.count
        }
        return filled ? PixelBuffer(width: width, height: height, channels: channels, bytes: bytes) : nil
    }

    package var rowBytes: Int { width * channels }
}

/// Why TurboJPEG gave up: the fast path then hands the bytes to libvips,
/// which decides (it may still render a truncated file, or name the error).
package struct TurboJPEGError: Error, Sendable, CustomStringConvertible {
    package let message: String
    package var description: String { "turbojpeg: \(message)" }
}

/// One TurboJPEG decompressor (GRDB's pattern: one final class per C
/// handle, freed in `deinit`; the pointer never leaves this class).
///
/// Not `Sendable`: a handle is used by the one render thread that made it.
final class TurboJPEGDecoder {
    private let handle: tjhandle

    init() throws(TurboJPEGError) {
        guard let handle = tjInitDecompress() else { throw TurboJPEGError(message: "cannot start a decompressor") }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// What the JPEG's header says: size, chroma subsampling, colour space.
    struct Header {
        var width: Int
        var height: Int
        /// `TJCS_*`: YCbCr, grey and RGB decode here; CMYK and YCCK do not.
        var colorspace: Int32
        /// `TJSAMP_*`: the chroma subsampling.
        var subsampling: Int32 = Int32(TJSAMP_444.rawValue)
    }

    func header(_ jpeg: UnsafeRawBufferPointer) throws(TurboJPEGError) -> Header {
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        let base = jpeg.baseAddress?.assumingMemoryBound(to: UInt8.self)
        guard tjDecompressHeader3(handle, base, UInt(jpeg.count), &width, &height, &subsampling, &colorspace) == 0 else {
            throw failure()
        }
        return Header(width: Int(width), height: Int(height), colorspace: colorspace, subsampling: subsampling)
    }

    /// A side scaled by `factor` as libjpeg scales it (rounded up).
    static func scaled(_ side: Int, _ factor: (num: Int, denom: Int)) -> Int {
        (side * factor.num + factor.denom - 1) / factor.denom
    }

    /// Decodes with the DCT scaled by `factor` into `channels` (1: grey,
    /// 3: RGB). A warning (a truncated or damaged file) is an error here.
    func decode(_ jpeg: UnsafeRawBufferPointer, factor: (num: Int, denom: Int), channels: Int,
                header: Header) throws(TurboJPEGError) -> PixelBuffer {
        let width = Self.scaled(header.width, factor), height = Self.scaled(header.height, factor)
        let format = channels == 1 ? TJPF_GRAY : TJPF_RGB
        let base = jpeg.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let pixels = PixelBuffer.filled(width: width, height: height, channels: channels) { out in
            tjDecompress2(handle, base, UInt(jpeg.count), out.baseAddress, Int32(width), Int32(width * channels),
                          Int32(height), Int32(format.rawValue), TJFLAG_STOPONWARNING) == 0
        }
        guard let pixels else { throw failure() }
        return pixels
    }

    /// The size of plane `component` (0: Y, 1: Cb, 2: Cr) of a decode
    /// scaled by `factor`.
    static func planeSize(_ header: Header, factor: (num: Int, denom: Int), component: Int) -> (width: Int, height: Int) {
        let width = Int32(scaled(header.width, factor)), height = Int32(scaled(header.height, factor))
        return (Int(tjPlaneWidth(Int32(component), width, header.subsampling)),
                Int(tjPlaneHeight(Int32(component), height, header.subsampling)))
    }

    /// Decodes a YCbCr JPEG with the DCT scaled by `factor` to its Y, Cb and
    /// Cr planes as they are stored (no colour conversion, chroma at its
    /// own resolution): three one-channel buffers. A warning is an error here.
    func decodePlanes(_ jpeg: UnsafeRawBufferPointer, factor: (num: Int, denom: Int),
                      header: Header) throws(TurboJPEGError) -> (y: PixelBuffer, cb: PixelBuffer, cr: PixelBuffer) {
        let sizes = (0..<3).map { Self.planeSize(header, factor: factor, component: $0) }
        guard sizes.allSatisfy({ $0.width >= 1 && $0.height >= 1 }) else {
            throw TurboJPEGError(message: "no planes for subsampling \(header.subsampling)")
        }
        var y = PixelBuffer(width: sizes[0].width, height: sizes[0].height, channels: 1)
        var cb = PixelBuffer(width: sizes[1].width, height: sizes[1].height, channels: 1)
        var cr = PixelBuffer(width: sizes[2].width, height: sizes[2].height, channels: 1)
        let base = jpeg.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var strides = sizes.map { Int32($0.width) }
        let status = y.bytes.withUnsafeMutableBufferPointer { yp in
            cb.bytes.withUnsafeMutableBufferPointer { cbp in
                cr.bytes.withUnsafeMutableBufferPointer { crp in
                    var planes: [UnsafeMutablePointer<UInt8>?] = [yp.baseAddress, cbp.baseAddress, crp.baseAddress]
                    return tjDecompressToYUVPlanes(handle, base, UInt(jpeg.count), &planes,
                                                   Int32(Self.scaled(header.width, factor)), &strides,
                                                   Int32(Self.scaled(header.height, factor)), TJFLAG_STOPONWARNING)
                }
            }
        }
        guard status == 0 else { throw failure() }
        return (y, cb, cr)
    }

    private func failure() -> TurboJPEGError {
        TurboJPEGError(message: tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown error")
    }
}

/// One TurboJPEG compressor (one C handle, freed in `deinit`).
final class TurboJPEGEncoder {
    private let handle: tjhandle

    init() throws(TurboJPEGError) {
        guard let handle = tjInitCompress() else { throw TurboJPEGError(message: "cannot start a compressor") }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// JPEG at `quality`, baseline or `progressive`: grey stays grey; colour
    /// is 4:2:0 below quality 90 and 4:4:4 from 90 (libvips' `jpegsave`
    /// default), no metadata (like `strip`).
    func encode(_ pixels: PixelBuffer, quality: Int, progressive: Bool = false) throws(TurboJPEGError) -> Data {
        let format = pixels.channels == 1 ? TJPF_GRAY : TJPF_RGB
        let subsampling = pixels.channels == 1 ? TJSAMP_GRAY : (quality < 90 ? TJSAMP_420 : TJSAMP_444)
        var output: UnsafeMutablePointer<UInt8>?
        var length: UInt = 0
        let status = pixels.bytes.withUnsafeBufferPointer { source in
            tjCompress2(handle, source.baseAddress, Int32(pixels.width), Int32(pixels.rowBytes), Int32(pixels.height),
                        Int32(format.rawValue), &output, &length, Int32(subsampling.rawValue), Int32(quality),
                        progressive ? TJFLAG_PROGRESSIVE : 0)
        }
        defer { if let output { tjFree(output) } }
        guard status == 0, let output else {
            throw TurboJPEGError(message: tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown error")
        }
        return Data(bytes: output, count: Int(length))
    }
}
