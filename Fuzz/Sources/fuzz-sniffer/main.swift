// Sniffer.sniff and the header readers used after it (extent, heifExtent,
// check). Any bytes at all reach them: whatever an origin sends.
@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
import Foundation
import FuzzSupport

let animatedFormats: Set<SniffedFormat> = [.gif, .apng, .webp, .avif]

runFuzzer { data in
    let result = Sniffer.sniff(data)
    require(result == Sniffer.sniff(offsetSlice(data)), "a Data slice sniffs differently: \(result)")
    require((result.format == .empty) == data.isEmpty, "empty iff no bytes, got \(result.format) for \(data.count) bytes")
    require(!result.isCompressedSVG || result.format == .svg, "isCompressedSVG on \(result.format)")
    require(!result.isAnimated || animatedFormats.contains(result.format), "isAnimated on \(result.format)")
    require(!result.mimeType.isEmpty, "empty media type")

    // The renderer's fast path reads these headers after the sniff.
    // The renderer multiplies the sides to check its pixel limit: the product must fit.
    for format in [SniffedFormat.jpeg, .png] {
        if let extent = Sniffer.extent(data, format: format) {
            require(extent.width >= 0 && extent.height >= 0, "negative \(format) extent \(extent)")
            require(!extent.width.multipliedReportingOverflow(by: extent.height).overflow, "\(format) extent \(extent) overflows")
        }
    }
    if let extent = Sniffer.heifExtent(data) {
        require(extent.width >= 0 && extent.height >= 0, "negative HEIF extent \(extent)")
        require(!extent.width.multipliedReportingOverflow(by: extent.height).overflow, "HEIF extent \(extent) overflows")
    }

    // The TIFF directory reader the renderer asks before libvips.
    if let directory = TIFFDirectory(data) {
        require(directory == TIFFDirectory(offsetSlice(data)), "a Data slice reads another TIFF directory")
        require(directory.width >= 0 && directory.height >= 0, "negative TIFF size \(directory.width)x\(directory.height)")
        _ = directory.undecodable(codecConfigured: { $0 != 34712 })
    }

    // The one check every stored body goes through.
    do throws(Sniffer.Refusal) {
        let checked = try Sniffer.check(data, declaredType: "image/png; charset=binary")
        require(result.format.isImage, "check accepted \(result.format)")
        require(checked.sniffed == result, "check sniffed \(checked.sniffed), sniff said \(result)")
        require(checked.declared == "image/png", "declared type \(String(describing: checked.declared))")
        require(checked.repaired == Sniffer.isMismatch(declared: "image/png", sniffed: result), "repaired flag")
    } catch {
        require(!result.format.isImage, "check refused \(result.format)")
        require(!error.message.isEmpty, "empty refusal message")
    }
}
