import ArtCacheCore
import ArtCachePipeline
import ArtCacheRender
import ArtCacheServiceGrammar
import Foundation

/// `f=auto`: which format a client gets, in one place (docs/formats.md). `Accept` says what the client takes (``Accepted``); the
/// ``FormatPolicy`` picks, per size class, the format of the cold answer and
/// the better one encoded behind it.
enum Negotiation {
    /// The image formats a client takes besides JPEG and PNG, from `Accept`.
    struct Accepted: OptionSet, Hashable, Sendable {
        let rawValue: UInt8
        static let webp = Accepted(rawValue: 1)
        static let avif = Accepted(rawValue: 2)
        static let jxl = Accepted(rawValue: 4)

        /// Parsed from an `Accept` header: a media range with `q=0` is a
        /// refusal; wildcards (`image/*`, `*/*`) name no format of their own
        /// (a client that only says `*/*` gets JPEG: it said nothing of AVIF).
        init(accept: String?) {
            var accepted: Accepted = []
            guard let accept else { self = accepted; return }
            for range in accept.split(separator: ",") {
                let parts = range.split(separator: ";")
                guard let type = parts.first?.trimmingCharacters(in: .whitespaces).lowercased() else { continue }
                let quality = parts.dropFirst().lazy.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                    .first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
                guard quality > 0 else { continue }
                if type == "image/avif" { accepted.insert(.avif) }
                if type == "image/webp" { accepted.insert(.webp) }
                if type == "image/jxl" { accepted.insert(.jxl) }
            }
            self = accepted
        }

        init(rawValue: UInt8) { self.rawValue = rawValue }

        /// The normalised class a front cache keys on (docs/formats.md; `scripts/scale-out/nginx.conf.template` maps `Accept` the same way).
        var frontCacheClass: String { contains(.jxl) ? "jxl" : contains(.avif) ? "avif" : contains(.webp) ? "webp" : "other" }
    }

    /// Whether a `Save-Data` header asks for fewer bytes: its first token
    /// is `on` (any case; parameters after `;` are ignored, as the Client
    /// Hints draft has them). Anything else, or no header, is no.
    static func savesData(_ header: String?) -> Bool {
        guard let header else { return false }
        return String(header.prefix { $0 != ";" }).trimmingWhitespace().lowercased() == "on"
    }

    /// ``Accepted`` of an `Accept` header, remembered: browsers send a few
    /// distinct headers, so a hit pays a dictionary lookup, not a parse.
    final class Memo: Sendable {
        private let known = BoundedMemo<String, Accepted>(capacity: 256)

        func accepted(_ accept: String?) -> Accepted {
            guard let accept else { return [] }
            if let hit = known[accept] { return hit }
            let parsed = Accepted(accept: accept)
            guard accept.utf8.count <= 512 else { return parsed }  // never remember a hostile header
            known.store(parsed, for: accept)
            return parsed
        }
    }
}

/// Which formats `f=auto` answers with, from the measured cost and bytes of
/// each format per size class (`QualityTable`, made by
/// `Benchmarks/quality/calibrate`) and the operator's `[service] avif` /
/// `webp` choices:
///
/// - the **cold** answer is the cheapest format to encode (at its cold
///   effort: the table's fastest), among those the client accepts and the
///   operator lets answer cold, whose bytes are within ``coldSlack`` (5%)
///   of the smallest of them at that size class (every cold effort in the
///   table encodes within its cold budget, ~AVIF speed 9's time, so a few
///   percent of bytes is worth more than the encode time between them:
///   WebP method 4 at 100 px, 8% smaller than AVIF speed 9 at the same CPU,
///   is Chrome's cold answer there; issue 51);
/// - the **better** encoding is the smallest the client accepts (cold or
///   `behind`) at the table's `.behind` effort — another format, or the
///   cold one at a slower effort — when the table says it saves
///   ``upgradeGain`` (15%) of the cold bytes: it is encoded behind the
///   answer (a `format_upgrade` job) and kept only when it saves that much
///   for this image.
///
/// JPEG (PNG with alpha: format `auto`) is always a cold candidate: every
/// client takes it.
struct FormatPolicy: Sendable {
    /// `[service] avif` / `webp`.
    typealias Use = ServiceSettings.FormatUse

    /// Encode cost and bytes of a format at a size class and effort tier (a test passes its own).
    struct Costs: Sendable {
        var millis: @Sendable (VariantSpec.Format, QualityTable.SizeClass, QualityTable.Tier) -> Double
        var bytes: @Sendable (VariantSpec.Format, QualityTable.SizeClass, QualityTable.Tier) -> Int

        /// The calibrated table (JPEG-scale q80; formats compared at equal perceptual quality).
        static let measured = Costs(
            millis: { format, size, tier in QualityTable.encodeMillis(Self.codec(format), size: size, tier: tier) },
            bytes: { format, size, tier in QualityTable.meanBytes(Self.codec(format), size: size, tier: tier) })

        static func codec(_ format: VariantSpec.Format) -> QualityTable.Codec {
            switch format {
            case .avif: .avif
            case .webp: .webp
            case .jxl: .jxl
            case .auto, .jpeg, .png: .jpeg
            }
        }
    }

    /// The cold answer and the format encoded behind it (nil: none).
    struct Choice: Sendable, Hashable {
        var cold: VariantSpec.Format
        var better: VariantSpec.Format?
    }

    static let coldSlack = 1.05
    /// The job's own rule (``ImagePipeline/upgradeGain``): proposed where the table says it holds on average.
    static let upgradeGain = ImagePipeline.upgradeGain

    var avif: Use
    var webp: Use
    /// This libvips/libheif encodes AVIF.
    var avifEncodes: Bool
    /// `[service] jxl` (off by default: Benchmarks/quality/README.md,
    /// "Issue 52: JPEG XL"), and whether this libvips encodes JPEG XL.
    var jxl: Use = .off
    var jxlEncodes = false
    var costs: Costs = .measured

    func choice(_ accepted: Negotiation.Accepted, size: ImageSize) -> Choice {
        let sizeClass = QualityTable.SizeClass(longEdge: max(size.width, size.height))
        var cold: [VariantSpec.Format] = [.auto]
        var behind: [VariantSpec.Format] = []
        func offer(_ format: VariantSpec.Format, _ use: Use) {
            switch use {
            case .cold: cold.append(format)
            case .behind: behind.append(format)
            case .off: break
            }
        }
        if accepted.contains(.webp) { offer(.webp, webp) }
        if accepted.contains(.avif), avifEncodes { offer(.avif, avif) }
        if accepted.contains(.jxl), jxlEncodes { offer(.jxl, jxl) }
        let coldBytes = { (format: VariantSpec.Format) in self.costs.bytes(format, sizeClass, .cold) }
        let behindBytes = { (format: VariantSpec.Format) in self.costs.bytes(format, sizeClass, .behind) }
        let smallestCold = cold.map(coldBytes).min() ?? 0
        let affordable = cold.filter { Double(coldBytes($0)) <= Double(smallestCold) * Self.coldSlack }
        let pick = affordable.min { costs.millis($0, sizeClass, .cold) < costs.millis($1, sizeClass, .cold) } ?? .auto
        // JPEG and PNG have no slower effort: `auto` is never a better encoding of itself.
        let better = (cold + behind).filter { $0 != .auto }.min { behindBytes($0) < behindBytes($1) }
        guard let better, Double(behindBytes(better)) <= Double(coldBytes(pick)) * Self.upgradeGain else {
            return Choice(cold: pick, better: nil)
        }
        return Choice(cold: pick, better: better)
    }

    /// Choices per (accepted, size): the hit path asks this for every request.
    final class Memo: Sendable {
        private struct Key: Hashable { let accepted: Negotiation.Accepted; let width: Int; let height: Int }
        private let known = BoundedMemo<Key, Choice>(capacity: 4096)
        let policy: FormatPolicy

        init(_ policy: FormatPolicy) { self.policy = policy }

        func choice(_ accepted: Negotiation.Accepted, size: ImageSize) -> Choice {
            let key = Key(accepted: accepted, width: size.width, height: size.height)
            return known.value(for: key) { policy.choice(accepted, size: size) }
        }
    }
}
