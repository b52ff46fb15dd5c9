import ArtCacheCore
import Foundation

/// The options segment of a service URL: what to make of the source image.
///
/// Grammar (comma-separated tokens, each at most once, any order):
///
/// | token | meaning |
/// | --- | --- |
/// | `300x200` | a thumbnail into this box (width x height, 1...`max_output`) |
/// | `fit=contain` / `cover` / `smart` | how it fills the box |
/// | `f=auto` / `jpeg` / `webp` / `png` / `avif` (or `format=`) | output format; `auto` negotiates from `Accept` |
/// | `q=80` (or `quality=`) | quality 1...100 |
/// | `p=avatar` (or `preset=`) | a named preset from `[presets]`; explicit tokens win over it |
/// | `pri=high` / `normal` / `low` | the request's class: its pipeline priority, and its place in the service's queue (see below) |
/// | `original` | the original bytes, as stored (no other token but `pri`) |
///
/// `description` writes the canonical form: size, fit, format, quality,
/// preset, class — the form `artcache sign` prints and signatures are made over.
///
/// `pri` is part of the signed options: a browser cannot set headers on
/// `<img>`, and the service trusts a class only from a signed path (on an
/// unsigned one it is ignored: class normal). Under overload the service
/// sheds low requests before any higher one waits.
public struct ThumbnailOptions: Sendable, Hashable, CustomStringConvertible {
    public var size: ImageSize?
    public var fit: VariantSpec.Fit?
    public var format: VariantSpec.Format?
    public var quality: Int?
    public var preset: String?
    /// `pri=`: the class, `.high`, `.normal` or `.low` (a higher or lower
    /// priority is written as the nearest class); nil: not given (normal).
    public var priority: ImagePriority?

    public init(size: ImageSize? = nil, fit: VariantSpec.Fit? = nil, format: VariantSpec.Format? = nil,
                quality: Int? = nil, preset: String? = nil, priority: ImagePriority? = nil) {
        self.size = size
        self.fit = fit
        self.format = format
        self.quality = quality
        self.preset = preset
        self.priority = priority
    }

    /// The original bytes.
    public static let original = ThumbnailOptions()

    /// True when nothing is asked for but the original (whatever the class).
    public var isOriginal: Bool { size == nil && fit == nil && format == nil && quality == nil && preset == nil }

    /// Parses an options segment; a malformed one is `.invalidRequest` naming the token.
    public init(parsing text: String) throws(ArtCacheError) {
        self.init()
        guard !text.isEmpty else { throw Self.invalid(text, "empty options (use `original` for the original)") }
        if text == "original" { return }
        var seen: Set<String> = []
        for token in text.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
            let name: String
            let value: String
            if let equals = token.firstIndex(of: "=") {
                name = Self.canonicalName(String(token[..<equals]))
                value = String(token[token.index(after: equals)...])
            } else {
                name = token == "original" ? "original" : "size"
                value = token
            }
            guard seen.insert(name).inserted else { throw Self.invalid(text, "`\(name)` given twice") }
            switch name {
            case "size":
                guard let size = ImageSize(value), !value.contains("X") else {  // one spelling per path
                    throw Self.invalid(text, "`\(token)` is not a size like 300x300 or a known option")
                }
                self.size = size
            case "fit":
                guard let fit = VariantSpec.Fit(rawValue: value) else {
                    throw Self.invalid(text, "fit must be one of \(VariantSpec.Fit.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                self.fit = fit
            case "f":
                guard let format = VariantSpec.Format(rawValue: value) else {
                    throw Self.invalid(text, "format must be one of \(VariantSpec.Format.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                self.format = format
            case "q":
                guard let quality = Int(value), (1...100).contains(quality), value.allSatisfy(\.isASCII) else {
                    throw Self.invalid(text, "quality must be an integer from 1 to 100")
                }
                self.quality = quality
            case "p":
                guard Self.isPresetName(value) else { throw Self.invalid(text, "preset names are [a-z0-9_-]+") }
                self.preset = value
            case "pri":
                guard let priority = Self.priorityClasses.first(where: { $0.name == value })?.priority else {
                    throw Self.invalid(text, "pri must be one of \(Self.priorityClasses.map(\.name).joined(separator: ", "))")
                }
                self.priority = priority
            case "original":
                break
            default:
                throw Self.invalid(text, "unknown option `\(name)` (known: WxH, fit, f, q, p, pri, original)")
            }
        }
        if seen.contains("original"), !seen.isSubset(of: ["original", "pri"]) {
            throw Self.invalid(text, "`original` takes no other option but pri")
        }
    }

    /// The classes `pri=` names, highest first: the one table both ways.
    private static let priorityClasses: [(name: String, priority: ImagePriority)] = [
        ("high", .high), ("normal", .normal), ("low", .low),
    ]

    /// The class `pri=` writes for `priority`: `high`, `normal` or `low`
    /// (the nearest class for a priority beyond them).
    package static func className(_ priority: ImagePriority) -> String {
        let classes = priorityClasses
        return (classes.first { priority >= $0.priority } ?? classes[classes.count - 1]).name
    }

    /// `size,fit=…,f=…,q=…,p=…,pri=…` with only the parts set; `original`
    /// (and `pri=…` when given) when none.
    public var description: String {
        var parts: [String] = []
        if let size { parts.append(size.description) }
        if let fit { parts.append("fit=\(fit.rawValue)") }
        if let format { parts.append("f=\(format.rawValue)") }
        if let quality { parts.append("q=\(quality)") }
        if let preset { parts.append("p=\(preset)") }
        if parts.isEmpty { parts.append("original") }
        if let priority { parts.append("pri=\(Self.className(priority))") }
        return parts.joined(separator: ",")
    }

    /// These options with the preset's values filled in where not given
    /// explicitly. An unknown preset, or fit/format/quality without a size,
    /// is `.invalidRequest`.
    public func resolved(presets: [String: ThumbnailOptions]) throws(ArtCacheError) -> ThumbnailOptions {
        var result = self
        if let name = preset {
            guard let base = presets[name] else {
                throw ArtCacheError(.invalidRequest, "unknown preset `\(name)` (known: \(presets.keys.sorted().joined(separator: ", ")))")
            }
            result = ThumbnailOptions(size: size ?? base.size, fit: fit ?? base.fit, format: format ?? base.format,
                                      quality: quality ?? base.quality, priority: priority ?? base.priority)
        }
        if result.size == nil, result.fit != nil || result.format != nil || result.quality != nil {
            throw ArtCacheError(.invalidRequest, "\(self): fit, format and quality need a size (originals are served as stored)")
        }
        return result
    }

    package static func isPresetName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64
            && name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" }
    }

    private static func canonicalName(_ name: String) -> String {
        switch name {
        case "format": "f"
        case "quality": "q"
        case "preset": "p"
        default: name
        }
    }

    private static func invalid(_ text: String, _ why: String) -> ArtCacheError {
        let shown = text.count > 80 ? String(text.prefix(80)) + "…" : text
        return ArtCacheError(.invalidRequest, "options \"\(shown)\": \(why)")
    }
}
