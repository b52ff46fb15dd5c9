import ArtCacheFixtures
@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
import Foundation
import HTTPTypes
import Hummingbird
import Testing

/// Issue 52 §3: JPEG XL for the browsers that ask for it (Safari 17's
/// `Accept`), only where the calibrated table says it pays, and only when
/// `[service] jxl` lets the policy use it (off by default).
@Suite("JPEG XL", .timeLimit(.minutes(3)))
struct JXLTests {
    /// The measured table (QualityTable): JXL is never the format behind,
    /// and the cold answer only at 600 px (AVIF speed 9's bytes within 5%,
    /// for less encode time); off by default.
    @Test func safari17GetsJXLOnlyWhereTheTablePays() {
        let safari17 = Negotiation.Accepted(accept: FormatPolicyTests.safari17)
        let off = FormatPolicy(avif: .cold, webp: .cold, avifEncodes: true, jxlEncodes: true)
        let cold = FormatPolicy(avif: .cold, webp: .cold, avifEncodes: true, jxl: .cold, jxlEncodes: true)
        let behind = FormatPolicy(avif: .cold, webp: .cold, avifEncodes: true, jxl: .behind, jxlEncodes: true)
        for side in [100, 300, 600] {
            let size = ImageSize(side)
            let chrome = off.choice(Negotiation.Accepted(accept: FormatPolicyTests.chrome), size: size)
            #expect(off.choice(safari17, size: size) == chrome, "\(side) px: off, Safari 17 is answered as Chrome")
            #expect(behind.choice(safari17, size: size) == chrome, "\(side) px: JXL is never the smallest behind")
            let choice = cold.choice(safari17, size: size)
            #expect(choice.cold == (side == 600 ? .jxl : chrome.cold), "\(side) px: \(choice)")
            #expect(choice.better == .avif, "\(side) px: AVIF speed 5 behind it")
            // Chrome never asks for it.
            #expect(cold.choice(Negotiation.Accepted(accept: FormatPolicyTests.chrome), size: size) == chrome)
        }
        // A libvips without jxlsave never offers it.
        let unable = FormatPolicy(avif: .cold, webp: .cold, avifEncodes: true, jxl: .cold, jxlEncodes: false)
        #expect(unable.choice(safari17, size: ImageSize(600)).cold != .jxl)
    }

    /// `f=jxl` renders a JPEG XL (libvips' `jxlsave`) of the asked size,
    /// from a JPEG (not the fast path) and a PNG.
    @Test func jxlOutputsDecodeAtTheirSize() async throws {
        let renderer = Renderer(settings: Fixtures.thumbnails { _ in })
        for source in [try SyntheticImage.zonePlateJPEG(width: 400, height: 300), try SyntheticImage.make(width: 400, height: 300, suffix: ".png")] {
            let out = try await renderer.render(source, spec: VariantSpec(width: 120, height: 120, fit: .cover, format: .jxl))
            #expect(out.format == .jxl && out.contentType == "image/jxl")
            #expect(Sniffer.sniff(out.data).format == .jxl)
            // (libvips' JXL loader is blocked in this process: the codestream's own size header.)
            let size = try #require(Self.codestreamSize(out.data))
            #expect(size.width == 120 && size.height == 120)
        }
    }

    /// The image size a bare JPEG XL codestream declares (its SizeHeader,
    /// bits read least significant first after the `FF 0A` signature).
    static func codestreamSize(_ data: Data) -> (width: Int, height: Int)? {
        let bytes = [UInt8](data)
        guard bytes.count > 8, bytes[0] == 0xFF, bytes[1] == 0x0A else { return nil }
        var bit = 16
        func read(_ count: Int) -> Int {
            var value = 0
            for k in 0..<count {
                value |= Int(bytes[bit >> 3] >> (bit & 7) & 1) << k
                bit += 1
            }
            return value
        }
        func u32() -> Int { [9, 13, 18, 30].map { n in { 1 + read(n) } }[read(2)]() }
        let small = read(1) == 1
        let height = small ? (1 + read(5)) * 8 : u32()
        let ratio = read(3)
        let ratios = [(1, 1), (12, 10), (4, 3), (3, 2), (16, 9), (5, 4), (2, 1)]
        let width = ratio > 0 ? height * ratios[ratio - 1].0 / ratios[ratio - 1].1 : small ? (1 + read(5)) * 8 : u32()
        return (width, height)
    }

    /// Through the service with `[service] jxl = "cold"`: Safari 17 gets a
    /// JPEG XL at 600 px, AVIF at 300; Chrome AVIF at both.
    @Test func theServiceAnswersSafari17WithJXLAt600() async throws {
        let s = try await ServiceHarness { $0.service.jxl = .cold }
        s.origin.register("p.jpg", .init(body: try SyntheticImage.zonePlateJPEG(width: 800, height: 800), contentType: "image/jpeg"))
        try await s.app().test(.router) { client in
            for (side, accept, type) in [(600, FormatPolicyTests.safari17, "image/jxl"), (300, FormatPolicyTests.safari17, "image/avif"),
                                         (600, FormatPolicyTests.chrome, "image/avif")] {
                let path = try s.path("/img/p.jpg", "\(side)x\(side),fit=cover")
                try await client.execute(uri: path, method: .get, headers: [.accept: accept]) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == type, "\(side) px, \(accept.prefix(20))")
                    #expect(response.headers[.vary] == "Accept, Save-Data")
                }
            }
        }
        try await s.close()
    }
}
