import ArtCacheFixtures
import Foundation
import Testing
@testable import ArtCacheRender

/// Per-thumbnail encode cost (process CPU time), the fast path's encoders
/// against libvips' savers on the same pixels (the options of the product's libvips save
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

    /// CPU milliseconds of the process (the encoder's threads included; on
    /// a shared machine, wall time counts the other jobs' turns too).
    static func cpuMilliseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1e3 + Double(time.tv_nsec) / 1e6
    }

    /// Median CPU milliseconds of `a` and of `b`, run in turns (so that
    /// drift on a shared machine touches both alike) over at least 7 rounds
    /// and ~2 s of CPU, after 2 warm-ups each; and their output sizes.
    static func measure(_ a: () throws -> Data, _ b: () throws -> Data) rethrows
        -> (a: Double, b: Double, bytes: (Int, Int)) {
        var bytes = (0, 0)
        for _ in 0..<2 { bytes = (try a().count, try b().count) }
        var times: ([Double], [Double]) = ([], [])
        let start = cpuMilliseconds()
        while times.0.count < 7 || (cpuMilliseconds() - start < 2000 && times.0.count < 200) {
            // Each goes first every other round: the second of a pair finds
            // the codec's tables and code warm.
            for first in times.0.count % 2 == 0 ? [true, false] : [false, true] {
                let before = cpuMilliseconds()
                if first { bytes.0 = try a().count } else { bytes.1 = try b().count }
                if first { times.0.append(cpuMilliseconds() - before) } else { times.1.append(cpuMilliseconds() - before) }
            }
        }
        let median = { (list: [Double]) in list.sorted()[list.count / 2] }
        return (median(times.0), median(times.1), bytes)
    }

    @Test func encodeCostPerThumbnail() throws {
        var lines = ["| size | encoder | setting | artcache encoder CPU ms | libvips saver CPU ms | ratio | bytes (ours / libvips) |",
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
                let m = try Self.measure(ours, theirs)
                #expect(m.bytes.0 > 0 && m.bytes.1 > 0)
                lines.append("| \(what) | \(codec) | \(setting) | \(String(format: "%.2f", m.a)) | "
                             + "\(String(format: "%.2f", m.b)) | \(String(format: "%.2f", m.b / m.a))× | \(m.bytes.0) / \(m.bytes.1) |")
            }
        }
        print(lines.joined(separator: "\n"))
    }

    static func vips(_ pixels: PixelBuffer, _ format: String, _ quality: Int, effort: Int) throws -> Data {
        try SyntheticImage.vipsSave(pixels.bytes, width: pixels.width, height: pixels.height, bands: pixels.channels,
                                    format: format, quality: quality, effort: effort)
    }
}
