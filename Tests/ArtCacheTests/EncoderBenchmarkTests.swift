import ArtCacheFixtures
import Foundation
import Testing
@_spi(Benchmarks) @testable import ArtCacheRender

/// Per-thumbnail encode cost, the fast path's encoders against libvips'
/// savers on the same pixels (the options of the product's libvips save
/// step). Runs only with `ARTCACHE_ENCODER_BENCH=1` (`Benchmarks/encoders/run`
/// pins it to one core); prints one line per row.
@Suite("Encoder benchmark", .enabled(if: ProcessInfo.processInfo.environment["ARTCACHE_ENCODER_BENCH"] == "1"),
       .timeLimit(.minutes(10)))
struct EncoderBenchmarkTests {
    /// Artwork-like pixels: a corpus photograph when present, else a zone
    /// plate; `side` on the long edge.
    static func pixels(side: Int) throws -> (PixelBuffer, String) {
        let photo = Fixtures.corpus + "/images/jpeg/exif_orientation_1.jpg"
        let (jpeg, name) = FileManager.default.fileExists(atPath: photo)
            ? (try Data(contentsOf: URL(fileURLWithPath: photo)), "photograph")
            : (try SyntheticImage.zonePlateJPEG(width: 600, height: 600, colour: true, quality: 90), "zone plate")
        let full = try FastJPEGTests.pixels(jpeg)
        let scale = Double(side) / Double(max(full.width, full.height))
        let pixels = Resampler.resize(full, width: max(1, Int((Double(full.width) * scale).rounded())),
                                      height: max(1, Int((Double(full.height) * scale).rounded())))
        return (pixels, "\(name) \(pixels.width)x\(pixels.height)")
    }

    /// Median milliseconds of `body` over at least 5 runs and ~1 s (after 2 warm-ups), and the output size.
    static func measure(_ body: () throws -> Data) rethrows -> (ms: Double, bytes: Int) {
        var bytes = 0
        for _ in 0..<2 { bytes = try body().count }
        var times: [Double] = []
        let clock = ContinuousClock()
        let start = clock.now
        while times.count < 5 || (clock.now - start < .seconds(1) && times.count < 200) {
            let elapsed = try clock.measure { bytes = try body().count }
            times.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
        }
        times.sort()
        return (times[times.count / 2], bytes)
    }

    @Test func encodeCostPerThumbnail() throws {
        var lines = ["| size | encoder | setting | artcache encoder ms | libvips saver ms | ratio | bytes (ours / libvips) |",
                     "| --- | --- | --- | --- | --- | --- | --- |"]
        for side in [100, 300] {
            let (pixels, what) = try Self.pixels(side: side)
            let rows: [(String, String, () throws -> Data, () throws -> Data)] = [
                ("WebP", "q80 m0", { try WebPEncoder.encode(pixels, quality: 80, method: 0) },
                 { try Self.vips(pixels, "webp", 80, effort: 0) }),
                ("WebP", "q80 m4", { try WebPEncoder.encode(pixels, quality: 80, method: 4) },
                 { try Self.vips(pixels, "webp", 80, effort: 4) }),
                ("AVIF", "q50 speed 6", { try AVIFEncoder.encode(pixels, quality: 50, speed: 6) },
                 { try Self.vips(pixels, "avif", 50, effort: 3) }),
                ("AVIF", "q50 speed 8", { try AVIFEncoder.encode(pixels, quality: 50, speed: 8) },
                 { try Self.vips(pixels, "avif", 50, effort: 1) }),
                ("AVIF", "q50 speed 9", { try AVIFEncoder.encode(pixels, quality: 50, speed: 9) },
                 { try Self.vips(pixels, "avif", 50, effort: 0) }),
            ]
            for (codec, setting, ours, theirs) in rows {
                let a = try Self.measure(ours)
                let b = try Self.measure(theirs)
                #expect(a.bytes > 0 && b.bytes > 0)
                lines.append("| \(what) | \(codec) | \(setting) | \(String(format: "%.2f", a.ms)) | "
                             + "\(String(format: "%.2f", b.ms)) | \(String(format: "%.2f", b.ms / a.ms))× | \(a.bytes) / \(b.bytes) |")
            }
        }
        print(lines.joined(separator: "\n"))
    }

    static func vips(_ pixels: PixelBuffer, _ format: String, _ quality: Int, effort: Int) throws -> Data {
        try SyntheticImage.vipsSave(pixels.bytes, width: pixels.width, height: pixels.height, bands: pixels.channels,
                                    format: format, quality: quality, effort: effort)
    }
}
