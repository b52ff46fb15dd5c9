import Foundation
import Testing

/// Issue 50, item 6: the README is a front door, the manual is `docs/`, and
/// `Benchmarks/RESULTS.md` links the dated runs of `Benchmarks/HISTORY.md`.
/// Every relative link of those pages resolves (to a file, and for an anchor
/// to a heading of that file, as GitHub names it), and every page the man
/// pages (the commands' `--help`, from the same definitions) name exists.
@Suite("Documentation links", .timeLimit(.minutes(2)))
struct DocsLinkTests {
    static let root = Fixtures.packageRoot

    static var pages: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: root + "/docs")) ?? []
        return ["README.md", "Benchmarks/RESULTS.md", "Benchmarks/HISTORY.md"]
            + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }

    @Test func relativeLinksResolve() throws {
        let pages = Self.pages
        #expect(pages.count >= 10, "docs/ holds the manual: \(pages)")
        var checked = 0
        for page in pages {
            let text = try String(contentsOfFile: Self.root + "/" + page, encoding: .utf8)
            let directory = URL(fileURLWithPath: Self.root + "/" + page).deletingLastPathComponent()
            for (line, target) in Markdown.links(in: text) where !target.contains(":") {
                checked += 1
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let path = String(parts[0]), anchor = parts.count > 1 ? String(parts[1]) : ""
                let file = path.isEmpty ? Self.root + "/" + page
                    : directory.appendingPathComponent(path).standardizedFileURL.path
                guard FileManager.default.fileExists(atPath: file) else {
                    Issue.record("\(page):\(line): \(target): no such file")
                    continue
                }
                guard !anchor.isEmpty, file.hasSuffix(".md") else { continue }
                let headings = Markdown.anchors(in: try String(contentsOfFile: file, encoding: .utf8))
                #expect(headings.contains(anchor), "\(page):\(line): \(target): no such heading")
            }
        }
        #expect(checked >= 100, "links checked: \(checked)")
    }

    /// The slug GitHub gives a heading (the anchors the pages link to).
    @Test func anchorsAreGitHubs() {
        #expect(Markdown.slug("`manifest --json` (stable)") == "manifest---json-stable")
        #expect(Markdown.slug("Quick start (Debian 12 + Swift 6)") == "quick-start-debian-12--swift-6")
        #expect(Markdown.slug("Memory over time (soak, issue 23) — 2026-11-26") == "memory-over-time-soak-issue-23--2026-11-26")
        #expect(Markdown.anchors(in: "# A\n\n## A\n```\n# not a heading\n```\n") == ["a", "a-1"])
    }

    /// Where `--help` (and so the man page) points at the manual, the page is
    /// there; no help text sends the reader to a section of the README.
    @Test func manPagesNamePagesThatExist() async throws {
        let commands = ["", "demo", "prefetch", "get", "thumb", "stats", "purge", "verify", "serve", "health", "sign", "manifest"]
        var named: Set<String> = []
        for command in commands {
            let help = try await CLI.run((command.isEmpty ? [] : [command]) + ["--help"])
            #expect(help.status == 0, "\(command) --help: \(help.stderr)")
            #expect(!help.stdout.replacingOccurrences(of: "README.md", with: "").contains("README"),
                    "\(command) --help points at the README: \(help.stdout)")
            for page in Markdown.pagesNamed(in: help.stdout) {
                named.insert(page)
                #expect(FileManager.default.fileExists(atPath: Self.root + "/" + page), "\(command) --help names \(page)")
            }
        }
        #expect(named.isSuperset(of: ["README.md", "docs/commands.md", "docs/http-api.md", "docs/operations.md"]),
                "pages named: \(named.sorted())")
    }
}

/// Just enough Markdown for the checks above: links and headings outside
/// fenced code.
private enum Markdown {
    /// The text's lines, with those inside ``` fences blanked.
    static func prose(_ text: String) -> [Substring] {
        var fenced = false
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            if line.drop(while: { $0 == " " }).hasPrefix("```") {
                fenced.toggle()
                return ""
            }
            return fenced ? "" : line
        }
    }

    /// Each `](target)` with its line number.
    static func links(in text: String) -> [(line: Int, target: String)] {
        var found: [(Int, String)] = []
        for (index, line) in prose(text).enumerated() {
            var rest = line[...]
            while let open = rest.range(of: "](") {
                let target = rest[open.upperBound...].prefix { $0 != ")" && $0 != " " }
                if rest[open.upperBound...].dropFirst(target.count).first == ")" { found.append((index + 1, String(target))) }
                rest = rest[open.upperBound...]
            }
        }
        return found
    }

    /// The anchors of the text's headings: the slug, then `-1`, `-2`… for repeats.
    static func anchors(in text: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors: Set<String> = []
        for line in prose(text) {
            let hashes = line.prefix { $0 == "#" }
            guard (1...6).contains(hashes.count), line.dropFirst(hashes.count).first == " " else { continue }
            let slug = slug(String(line.dropFirst(hashes.count + 1)))
            let repeats = seen[slug, default: 0]
            seen[slug] = repeats + 1
            anchors.insert(repeats == 0 ? slug : "\(slug)-\(repeats)")
        }
        return anchors
    }

    /// GitHub's heading slug: link text for links, lower case, letters,
    /// numbers, marks, `_`, `-` and spaces kept, spaces made `-`.
    static func slug(_ heading: String) -> String {
        var text = ""
        var rest = heading.trimmingCharacters(in: .whitespaces)[...]
        while let open = rest.firstIndex(of: "["), let middle = rest[open...].range(of: "]("),
              let close = rest[middle.upperBound...].firstIndex(of: ")") {
            text += rest[..<open] + rest[rest.index(after: open)..<middle.lowerBound]
            rest = rest[rest.index(after: close)...]
        }
        text += rest
        let kept = text.lowercased().unicodeScalars.filter { scalar in
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                 .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber:
                return true
            default:
                return scalar == " " || scalar == "-" || scalar == "_"
            }
        }
        return String(String.UnicodeScalarView(kept)).replacingOccurrences(of: " ", with: "-")
    }

    /// The pages of the manual a help text names: `README.md` and `docs/NAME.md`.
    static func pagesNamed(in text: String) -> Set<String> {
        var pages: Set<String> = text.contains("README.md") ? ["README.md"] : []
        var rest = text[...]
        while let start = rest.range(of: "docs/") {
            let name = rest[start.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" }
            if !name.isEmpty, rest[start.upperBound...].dropFirst(name.count).hasPrefix(".md") {
                pages.insert("docs/\(name).md")
            }
            rest = rest[start.upperBound...]
        }
        return pages
    }
}
