import ArtCacheFixtures
import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheRender

/// Issue 52 §1: animated GIF and WebP sources give animated WebP
/// thumbnails (every frame resized, delays and loop kept) to WebP outputs,
/// their first frame to every other format, and their first frame marked
/// `still = .frames` past `max_frames` or `max_animation_pixels` — never an
/// error.
@Suite("Animated sources", .timeLimit(.minutes(3)))
struct AnimationTests {
    /// What an animated WebP says of itself: its canvas (VP8X), loop count
    /// (ANIM) and each frame's duration in ms (ANMF), from the RIFF chunks.
    struct WebPAnimation: Equatable {
        var width: Int, height: Int
        var loop: Int
        var durations: [Int]
    }

    static func webpAnimation(_ data: Data) -> WebPAnimation? {
        let b = [UInt8](data)
        func le(_ at: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 | Int(b[at + $1]) << (8 * $1) } }
        guard b.count > 30, b[0..<4] == [0x52, 0x49, 0x46, 0x46], b[8..<12] == [0x57, 0x45, 0x42, 0x50] else { return nil }
        var animation = WebPAnimation(width: 0, height: 0, loop: -1, durations: [])
        var at = 12
        while at + 8 <= b.count {
            let fourCC = String(decoding: b[at..<at + 4], as: UTF8.self), size = le(at + 4, 4), payload = at + 8
            guard payload + size <= b.count else { return nil }
            switch fourCC {
            case "VP8X": (animation.width, animation.height) = (le(payload + 4, 3) + 1, le(payload + 7, 3) + 1)
            case "ANIM": animation.loop = le(payload + 4, 2)
            case "ANMF": animation.durations.append(le(payload + 12, 3))
            default: break
            }
            at = payload + size + (size & 1)
        }
        return animation.durations.isEmpty ? nil : animation
    }

    static let delays = [100, 250, 400]

    /// A 3-frame GIF and a 3-frame animated WebP, to WebP cover and contain:
    /// animated, every frame at the output size, delays and loop kept.
    @Test(arguments: [false, true]) func animatedSourcesGiveAnimatedWebP(webp: Bool) async throws {
        let source = try SyntheticImage.animation(width: 240, height: 160, delays: Self.delays, webp: webp)
        #expect(Sniffer.sniff(source).isAnimated)
        let renderer = Renderer(settings: Fixtures.thumbnails { _ in })
        for (spec, size) in [(VariantSpec(width: 100, height: 100, fit: .cover, format: .webp), (100, 100)),
                             (VariantSpec(width: 120, height: 120, fit: .contain, format: .webp), (120, 80))] {
            let out = try await renderer.render(source, spec: spec)
            let animation = try #require(Self.webpAnimation(out.data), "\(spec.canonical): an animated WebP")
            #expect(animation == WebPAnimation(width: size.0, height: size.1, loop: 0, durations: Self.delays), "\(spec.canonical)")
            #expect((out.width, out.height) == size && out.frames == 3 && out.still == nil)
            // libvips reads it back as three frames.
            let header = try #require(Fixtures.header(out.data))
            #expect(header.frames == 3 && header.width == size.0 && header.height == size.1)
        }
    }

    /// JPEG, PNG and AVIF outputs of the same source are its first frame.
    @Test func otherFormatsGetTheFirstFrame() async throws {
        let source = try SyntheticImage.animation(width: 240, height: 160, delays: Self.delays, webp: false)
        let renderer = Renderer(settings: Fixtures.thumbnails { _ in })
        let specs = [VariantSpec(width: 100, height: 100, fit: .cover, format: .jpeg),
                     VariantSpec(width: 100, height: 100, fit: .cover, format: .png),
                     VariantSpec(width: 100, height: 100, fit: .cover, format: .webp),
                     VariantSpec(width: 100, height: 100, fit: .cover, format: .avif)]
        let outputs = try await renderer.render(source, specs: specs)
        #expect(outputs.map(\.frames) == [1, 1, 3, 1])
        #expect(outputs.map(\.format) == [.jpeg, .png, .webp, .avif])
        #expect(outputs.allSatisfy { $0.still == nil })
        #expect(Self.webpAnimation(outputs[2].data)?.durations == Self.delays)
    }

    /// Past `max_frames` or `max_animation_pixels` (from the header): the
    /// first frame, marked, never an error; at the limit itself: animated.
    @Test func pastTheLimitsAStill() async throws {
        let source = try SyntheticImage.animation(width: 100, height: 100, delays: Self.delays, webp: false)
        let spec = VariantSpec(width: 50, height: 50, fit: .cover, format: .webp)
        for (frames, pixels, animated) in [(2, 50_000_000, false), (3, 50_000_000, true), (100, 29_999, false), (100, 30_000, true)] {
            let renderer = Renderer(settings: Fixtures.thumbnails { $0.maxFrames = frames; $0.maxAnimationPixels = pixels })
            let out = try await renderer.render(source, spec: spec)
            #expect(out.frames == (animated ? 3 : 1), "max_frames \(frames), max_animation_pixels \(pixels)")
            #expect(out.still == (animated ? nil : .frames))
            #expect((Self.webpAnimation(out.data) != nil) == animated)
            #expect(Fixtures.header(out.data)?.frames == (animated ? 3 : 1))
        }
    }

    /// The cover box of a frame: the frame scaled to cover the spec, never enlarged.
    @Test func animationBoxKnownAnswers() {
        let cover = VariantSpec(width: 100, height: 100, fit: .cover)
        let wide = Renderer.animationBox(frame: (240, 160), spec: cover)
        #expect(wide.box == (150, 100) && wide.output == (100, 100))
        let small = Renderer.animationBox(frame: (60, 40), spec: cover)
        #expect(small.box == (60, 40) && small.output == (60, 40))
        let contain = Renderer.animationBox(frame: (240, 160), spec: VariantSpec(width: 100, height: 100, fit: .contain))
        #expect(contain.box == (100, 100) && contain.output == (100, 100))
    }
}
