@testable import ArtCacheRender
@testable import ArtCacheServer
import ArtCacheCore
import Foundation
import Testing

/// The negotiation table (docs/formats.md): `Accept` → accepted
/// formats, and the format policy's cold and better formats per size, with
/// costs given here so the rule (not the measured table) is what is checked.
@Suite("Format policy")
struct FormatPolicyTests {
    /// The exact image `Accept` of each browser (for an `<img>`).
    static let chrome = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
    static let safari17 = "image/webp,image/avif,image/jxl,image/heic,image/heic-sequence,video/*;q=0.8,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5"
    static let safari16 = "image/webp,image/avif,video/*;q=0.8,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5"
    static let safari14 = "image/webp,image/png,image/svg+xml,image/*;q=0.8,video/*;q=0.8,*/*;q=0.5"
    static let firefox = "image/avif,image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5"

    @Test(arguments: [
        (chrome, Negotiation.Accepted([.avif, .webp]), "avif"),
        (safari17, [.avif, .webp, .jxl], "jxl"),
        (safari16, [.avif, .webp], "avif"),
        (firefox, [.avif, .webp], "avif"),
        (safari14, [.webp], "webp"),
        ("image/jpeg,image/png,*/*;q=0.5", [], "other"),
        ("*/*", [], "other"),
        ("image/*", [], "other"),
        ("IMAGE/AVIF ; Q=1 , image/webp;q=0", [.avif], "avif"),
        ("image/avif;q=0, image/webp", [.webp], "webp"),
        ("image/avif;q=0.0", [], "other"),
        ("", [], "other"),
    ] as [(String, Negotiation.Accepted, String)])
    func acceptNamesTheFormatsAClientTakes(accept: String, accepted: Negotiation.Accepted, frontClass: String) {
        #expect(Negotiation.Accepted(accept: accept) == accepted, "\(accept)")
        #expect(Negotiation.Accepted(accept: accept).frontCacheClass == frontClass)
        let memo = Negotiation.Memo()
        #expect(memo.accepted(accept) == accepted && memo.accepted(accept) == accepted)
        #expect(memo.accepted(nil) == [])
    }

    /// Bytes and milliseconds per format for one size class at the cold
    /// effort, and bytes at the behind effort, as a table gives them.
    static func costs(_ cold: [VariantSpec.Format: (bytes: Int, millis: Double)],
                      behind: [VariantSpec.Format: Int] = [:]) -> FormatPolicy.Costs {
        @Sendable func key(_ format: VariantSpec.Format) -> VariantSpec.Format { format == .auto ? .jpeg : format }
        return FormatPolicy.Costs(
            millis: { format, _, _ in cold[key(format)]!.millis },
            bytes: { format, _, tier in tier == .behind ? behind[key(format)] ?? cold[key(format)]!.bytes : cold[key(format)]!.bytes })
    }

    /// WebP within 5% of AVIF cold and cheaper: WebP cold; AVIF behind saves 35%.
    static let close = costs([.jpeg: (3100, 0.06), .webp: (2300, 1.2), .avif: (2200, 2.5)], behind: [.webp: 2100, .avif: 1500])
    /// The measured shape at 300 px: AVIF far smaller cold, and smaller again at its slower effort.
    static let apart = costs([.jpeg: (10757, 0.5), .webp: (10542, 3.6), .avif: (7196, 14.0)], behind: [.webp: 7409, .avif: 5140])

    @Test func theColdAnswerIsTheCheapestWithinFivePercentOfTheSmallest() {
        let size = ImageSize(100)
        var policy = FormatPolicy(avif: .cold, webp: .cold, avifEncodes: true, costs: Self.close)
        #expect(policy.choice([.avif, .webp], size: size) == .init(cold: .webp, better: .avif))
        #expect(policy.choice([.webp], size: size) == .init(cold: .webp, better: nil), "2100 is not 15% under 2300")
        #expect(policy.choice([.avif], size: size) == .init(cold: .avif, better: .avif), "the same format, a slower effort")
        #expect(policy.choice([], size: size) == .init(cold: .auto, better: nil))
        policy.costs = Self.apart
        #expect(policy.choice([.avif, .webp], size: size) == .init(cold: .avif, better: .avif))
        // JPEG within 5% of WebP cold and cheaper: JPEG cold, WebP (slow effort) behind.
        #expect(policy.choice([.webp], size: size) == .init(cold: .auto, better: .webp))
        // No encoding saves 15% by the table: nothing behind.
        policy.costs = Self.costs([.jpeg: (1980, 0.06), .webp: (1900, 1.2), .avif: (2500, 2.5)], behind: [.webp: 1800])
        #expect(policy.choice([.avif, .webp], size: size) == .init(cold: .auto, better: nil))
    }

    @Test func operatorChoicesCombine() {
        let size = ImageSize(width: 300, height: 200)
        var policy = FormatPolicy(avif: .behind, webp: .cold, avifEncodes: true, costs: Self.apart)
        #expect(policy.choice([.avif, .webp], size: size) == .init(cold: .auto, better: .avif))
        policy.avif = .off
        #expect(policy.choice([.avif, .webp], size: size) == .init(cold: .auto, better: .webp))
        policy.webp = .off
        #expect(policy.choice([.avif, .webp], size: size) == .init(cold: .auto, better: nil))
        policy.webp = .behind
        #expect(policy.choice([.webp], size: size) == .init(cold: .auto, better: .webp))
        // No AVIF encoder here: as if "off".
        policy = FormatPolicy(avif: .cold, webp: .cold, avifEncodes: false, costs: Self.apart)
        #expect(policy.choice([.avif, .webp], size: size) == .init(cold: .auto, better: .webp))
        #expect(policy.choice([.avif], size: size) == .init(cold: .auto, better: nil))
    }

    @Test func sizeClassesComeFromTheLongerEdge() {
        #expect(QualityTable.SizeClass(longEdge: 1) == .small)
        #expect(QualityTable.SizeClass(longEdge: 150) == .small)
        #expect(QualityTable.SizeClass(longEdge: 151) == .medium)
        #expect(QualityTable.SizeClass(longEdge: 450) == .medium)
        #expect(QualityTable.SizeClass(longEdge: 451) == .large)
        // The policy asks per class: a 100x400 box is priced as 300 px.
        let byClass = FormatPolicy.Costs(
            millis: { format, size, _ in format == .webp ? 1 : format == .avif ? (size == .small ? 2 : 50) : 0.1 },
            bytes: { format, _, _ in format == .webp ? 1000 : format == .avif ? 980 : 5000 })
        let policy = FormatPolicy(avif: .cold, webp: .cold, avifEncodes: true, costs: byClass)
        #expect(policy.choice([.avif, .webp], size: ImageSize(width: 100, height: 400)).cold == .webp)
        #expect(policy.choice([.avif, .webp], size: ImageSize(width: 100, height: 100)).cold == .webp)
    }

    /// With the calibrated table: Chrome never gets JPEG cold, an old client always does.
    @Test func theMeasuredTableGivesBrowsersTheirFormats() {
        let policy = FormatPolicy(avif: .cold, webp: .cold, avifEncodes: true)
        for side in [64, 100, 300, 600] {
            #expect(policy.choice([.avif, .webp], size: ImageSize(side)).cold != .auto, "\(side)")
            #expect(policy.choice([], size: ImageSize(side)) == .init(cold: .auto, better: nil))
        }
        // Per size, not per format (issue 51): at 100 px WebP method 4 is
        // smaller than AVIF speed 9 at the same encode time, AVIF behind it;
        // from 300 px AVIF speed 9 cold, a slower AVIF behind.
        #expect(policy.choice([.avif, .webp], size: ImageSize(100)) == .init(cold: .webp, better: .avif))
        #expect(policy.choice([.avif, .webp], size: ImageSize(300)) == .init(cold: .avif, better: .avif))
    }

    @Test func theMemoAnswersAsThePolicy() {
        let policy = FormatPolicy(avif: .cold, webp: .cold, avifEncodes: true, costs: Self.close)
        let memo = FormatPolicy.Memo(policy)
        for accepted in [Negotiation.Accepted([]), [.webp], [.avif], [.avif, .webp]] {
            for side in [50, 100, 300, 600] {
                #expect(memo.choice(accepted, size: ImageSize(side)) == policy.choice(accepted, size: ImageSize(side)))
                #expect(memo.choice(accepted, size: ImageSize(side)) == policy.choice(accepted, size: ImageSize(side)))
            }
        }
    }
}
