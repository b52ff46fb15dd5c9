@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
@testable import ArtCacheStore
import CVipsShim
import CZlib
import Foundation
import Hummingbird
import Testing

/// Review findings on libvips: a render has a deadline enforced through
/// libvips' kill flag, and ImageMagick decodes BMP and ICO only, called
/// explicitly, never as a fallback for other bytes.
@Suite("Render deadline and ImageMagick scope", .timeLimit(.minutes(3)))
struct RenderLimitTests {
    /// A valid, all-black RGB PNG: tiny on the wire (zeros deflate ~1000:1)
    /// but `width` x `height` pixels to inflate and resize.
    static func flatPNG(width: Int, height: Int) -> Data {
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func chunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            let typed = Array(type.utf8) + payload
            let crc = typed.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, uInt($0.count))) }
            return be(UInt32(payload.count)) + typed + be(crc)
        }
        var stream = z_stream()
        _ = deflateInit_(&stream, 9, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        var row = [UInt8](repeating: 0, count: 1 + width * 3)  // filter byte + pixels
        var compressed: [UInt8] = []
        var out = [UInt8](repeating: 0, count: 1 << 16)
        for index in 0..<height {
            let flush = index == height - 1 ? Z_FINISH : Z_NO_FLUSH
            row.withUnsafeMutableBufferPointer { input in
                stream.next_in = input.baseAddress
                stream.avail_in = uInt(input.count)
                repeat {
                    out.withUnsafeMutableBufferPointer { output in
                        stream.next_out = output.baseAddress
                        stream.avail_out = uInt(output.count)
                        _ = deflate(&stream, flush)
                        compressed += output.prefix(output.count - Int(stream.avail_out))
                    }
                } while stream.avail_out == 0 || (flush == Z_FINISH && stream.avail_in > 0)
            }
        }
        deflateEnd(&stream)
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        bytes += chunk("IHDR", be(UInt32(width)) + be(UInt32(height)) + [8, 2, 0, 0, 0])
        bytes += chunk("IDAT", compressed)
        bytes += chunk("IEND", [])
        return Data(bytes)
    }

    /// A render past `render_timeout` is stopped by libvips' kill flag and
    /// ends as a typed error; the render thread is free for the next one.
    @Test func aRenderPastItsDeadlineIsKilledAndTheWorkerFreed() async throws {
        let big = Self.flatPNG(width: 10_000, height: 10_000)
        #expect(big.count < 1_000_000)
        let renderer = Renderer(settings: Fixtures.thumbnails {
            $0.maxSourcePixels = 200_000_000
            $0.concurrency = 1
            $0.renderTimeout = 0.1
        })
        let error = await #expect(throws: RenderError.self) {
            _ = try await renderer.render(big, spec: VariantSpec(width: 100, height: 100))
        }
        #expect(error?.code == .timedOut)
        #expect(ArtCacheError(try #require(error)).code == .tooLarge)
        // The (only) worker is free again and takes the next job (a job, not
        // a render: under load even a tiny render may pass a 0.1 s deadline).
        await renderer.threads.waitForLoad { $0 == (0, 0) }
        #expect(try await renderer.onRenderThread(priority: PriorityHandle(.normal)) { 42 } == 42)
        // Several outputs from one decode are held to the deadline too.
        let many = await #expect(throws: RenderError.self) {
            _ = try await renderer.render(big, specs: [VariantSpec(width: 100, height: 100), VariantSpec(width: 300, height: 300)])
        }
        #expect(many?.code == .timedOut)
    }

    /// Every way a render can go ends as `render_timeout` past its
    /// deadline: a single output on the bytes (contain, and cover with
    /// libvips' centre crop), the attention crop (smart: the decode it looks
    /// at is computed under the kill flag first, the crop runs on those
    /// pixels) and several outputs from one decode. (libvips checks the kill flag as it computes the
    /// output's tiles: a decode without shrink-on-load, such as this PNG's,
    /// runs to its end first; `max_source_pixels` bounds it.)
    @Test(arguments: [["100x100,contain"], ["100x100,cover"], ["100x100,smart"], ["100x100,smart", "300x300,cover"]])
    func everyRenderPathEndsAtItsDeadline(_ sizes: [String]) async throws {
        let big = Self.flatPNG(width: 7_000, height: 7_000)  // 49 MP
        let specs = sizes.map { text -> VariantSpec in
            let parts = text.split(separator: ",")
            return VariantSpec(size: String(parts[0]), fit: VariantSpec.Fit(rawValue: String(parts[1]))!)!
        }
        let renderer = Renderer(settings: Fixtures.thumbnails {
            $0.maxSourcePixels = 100_000_000
            $0.concurrency = 1
            $0.renderTimeout = 0.001
        })
        let error = await #expect(throws: RenderError.self) { _ = try await renderer.render(big, specs: specs) }
        #expect(error?.code == .timedOut, "\(sizes)")
        // The error above is the deadline, not the image.
        let generous = Renderer(settings: Fixtures.thumbnails { $0.maxSourcePixels = 100_000_000 })
        #expect(try await generous.render(big, specs: specs).count == specs.count)
    }

    /// The service path: a render past `render_timeout` answers 413
    /// `too_large` (smart crop included), and the service renders again after.
    @Test func theServiceAnswers413ForARenderPastItsDeadline() async throws {
        let s = try await ServiceHarness {
            $0.thumbnails.maxSourcePixels = 100_000_000
            $0.thumbnails.renderTimeout = 0.1
        }
        s.origin.register("big.png", .init(body: Self.flatPNG(width: 7_000, height: 7_000), contentType: "image/png"))
        try await s.app().test(.router) { client in
            for options in ["100x100", "100x100,fit=smart", "100x100,fit=cover"] {
                try await client.execute(uri: try s.path("/img/big.png", options), method: .get) { response in
                    #expect(response.status.code == 413, "\(options)")
                    #expect(response.headers[.artcacheError] == "too_large", "\(options)")
                }
            }
        }
        // Its render workers are free again.
        await s.pipeline.renderer.threads.waitForLoad { $0 == (0, 0) }
        try await s.close()
    }

    /// The same image renders when the deadline is generous: the error above
    /// is the deadline, not the image.
    @Test func theSameImageRendersWithinAGenerousDeadline() async throws {
        let renderer = Renderer(settings: Fixtures.thumbnails {
            $0.maxSourcePixels = 200_000_000
            $0.renderTimeout = 120
        })
        let rendered = try await renderer.render(Self.flatPNG(width: 3000, height: 3000), spec: VariantSpec(width: 100, height: 100))
        #expect(rendered.width == 100)
    }

    @Test func imageMagickDecodesBMPAndICOWhenEnabled() async throws {
        let renderer = Renderer(settings: Fixtures.thumbnails { $0.allowMagick = true })
        for suffix in ["magick:bmp", "magick:ico"] {
            let data = try Fixtures.image(width: 64, height: 48, suffix: suffix)
            let rendered = try await renderer.render(data, spec: VariantSpec(width: 32, height: 32))
            #expect(rendered.width == 32, "\(suffix)")
            #expect(try renderer.header(of: data).loader.contains("Magick"))
        }
    }

    /// ImageMagick reads dozens of formats; here it is called explicitly for
    /// bytes sniffed as BMP or ICO and must have read them as such. Bytes it
    /// reads as anything else (TGA here) are refused even with the ImageMagick
    /// loader as the only one allowed, and no other sniffed format reaches it.
    @Test func imageMagickNeverDecodesOtherFormats() throws {
        try Renderer.start()
        let tga = try Fixtures.image(width: 64, height: 48, suffix: "magick:tga")
        let refused = #expect(throws: RenderError.self) {
            _ = try VipsImage(tga, format: .bmp, loaders: Int32(CVIPS_LOADER_MAGICK))
        }
        #expect(refused?.code == .unsupported)
        let renderer = Renderer(settings: Fixtures.thumbnails { $0.allowMagick = true })
        for format in SniffedFormat.allCases where ![.bmp, .ico].contains(format) {
            #expect(renderer.loaders(for: format) & Int32(CVIPS_LOADER_MAGICK) == 0, "\(format)")
        }
        // A BMP with the magick bit mixed into another mask is not probed into ImageMagick.
        let bmp = try Fixtures.image(width: 64, height: 48, suffix: "magick:bmp")
        #expect(throws: RenderError.self) {
            _ = try VipsImage(bmp, format: .bmp, loaders: Int32(CVIPS_LOADER_MAGICK | CVIPS_LOADER_JPEG))
        }
    }
}
