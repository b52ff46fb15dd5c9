// The JPEG fast path on whatever bytes an origin sends that sniff as JPEG:
// the marker walk (EXIF orientation, ICC profile), TurboJPEG's header read,
// and, when it plans a render, the decode, resample, orient, crop and
// encode. Never a crash; a render is nil (libvips decides), typed errors,
// or outputs of exactly the asked size.
@testable import ArtCacheCore
@testable import ArtCacheRender
import Foundation
import FuzzSupport

let specs = [VariantSpec(width: 24, height: 24, fit: .cover, format: .jpeg, quality: 70),
             VariantSpec(width: 40, height: 16, fit: .contain, format: .webp, quality: 60)]

runFuzzer { data in
    if let metadata = JPEGMetadata(data) {
        require((1...8).contains(metadata.orientation), "orientation \(metadata.orientation)")
        require(!metadata.profileIsSRGB || metadata.hasProfile, "an sRGB profile that is not there")
        require(JPEGMetadata(offsetSlice(data)) == metadata, "a Data slice reads differently")
    }
    // At most 1 megapixel: a fuzzer-made header may declare any size.
    guard let plan = JPEGFastPath.plan(data, specs: specs, maxSourcePixels: 1 << 20) else { return }
    do throws(RenderError) {
        guard let images = try plan.render(data, deadline: .now + .seconds(10)) else { return }
        require(images.count == specs.count, "\(images.count) outputs for \(specs.count) specs")
        let cover = images[0]
        require(cover.width == 24 && cover.height == 24, "cover output \(cover.width)x\(cover.height)")
        let contain = images[1]
        require(contain.width >= 1 && contain.width <= 40 && contain.height >= 1 && contain.height <= 16,
                "contain output \(contain.width)x\(contain.height)")
        require(images.allSatisfy { !$0.data.isEmpty }, "an empty encode")
    } catch {
        require(error.code == .timedOut || error.code == .encode, "unexpected \(error.code)")
    }
}
