import ArtCacheCore
import CVipsShim
import Foundation

/// Images the renderer makes rather than resizes: solid placeholders and
/// contact sheets.
extension Renderer {
    /// A solid `rgb` image of `width` x `height` in `format` (auto: JPEG).
    package func solidImage(width: Int, height: Int, rgb: [Double], format: VariantSpec.Format, quality: Int) throws(RenderError) -> RenderedImage {
        try Self.start()
        var output: UnsafeMutableRawPointer?
        var length = 0
        let code = VipsImage.code(of: format)
        let status = (rgb + [200, 200, 200]).prefix(3).map { $0 }.withUnsafeBufferPointer {
            cvips_solid_image(Int32(width), Int32(height), $0.baseAddress, Int32(code), Int32(quality), &output, &length)
        }
        guard status == Int32(CVIPS_OK), let output else {
            throw RenderError(.encode, "cannot encode a \(width)x\(height) \(format.rawValue) placeholder")
        }
        defer { cvips_free(output) }
        return RenderedImage(data: Data(bytes: output, count: length), width: width, height: height,
                             format: format == .auto ? .jpeg : format, hasAlpha: false)
    }

    /// One PNG tiling `images` (nil = blank cell) in order, `columns` per row.
    package func contactSheet(_ images: [Data?], cell: Int = 100, columns: Int = 8) async throws -> Data {
        try Self.start()
        // Cells go through libvips' own loader probing: only the formats of
        // the always-on loaders (never SVG or ImageMagick) get that far.
        let images = images.map { cell in
            cell.flatMap { loaders(for: Sniffer.sniff($0).format) & Int32(Self.coreLoaders) != 0 ? $0 : nil }
        }
        return try await onRenderThread(priority: PriorityHandle(.normal)) { () throws(RenderError) -> Data in
            var output: UnsafeMutableRawPointer?
            var length = 0
            let pointers = images.map { $0.map { data -> UnsafeMutableRawPointer in
                let copy = UnsafeMutableRawPointer.allocate(byteCount: max(1, data.count), alignment: 1)
                data.copyBytes(to: copy.assumingMemoryBound(to: UInt8.self), count: data.count)
                return copy
            } }
            defer { pointers.forEach { $0?.deallocate() } }
            let lengths = images.map { $0?.count ?? 0 }
            var constPointers = pointers.map { $0.map { UnsafeRawPointer($0) } }
            let status = constPointers.withUnsafeMutableBufferPointer { buffers in
                lengths.withUnsafeBufferPointer { lengths in
                    cvips_contact_sheet(buffers.baseAddress, lengths.baseAddress, Int32(images.count), Int32(cell),
                                        Int32(max(1, columns)), &output, &length)
                }
            }
            guard status == 0, let output else {
                throw RenderError(.encode, "contact sheet failed")
            }
            defer { cvips_free(output) }
            return Data(bytes: output, count: length)
        }
    }
}
