import Foundation

/// Text formats: SVG, HTML, XML, JSON and plain text.
extension Sniffer {
    /// Root (or first) element names that mark an HTML document.
    static let htmlTagNames: Set<String> = [
        "html", "head", "body", "title", "meta", "link", "style", "script", "noscript", "base",
        "h1", "h2", "h3", "h4", "h5", "h6", "p", "div", "span", "center", "pre", "br", "hr",
        "table", "a", "b", "i", "u", "em", "strong", "font", "img", "iframe", "form", "input",
        "button", "ul", "ol", "li", "header", "footer", "main", "nav", "section", "article",
    ]

    /// Classifies a body that carried no binary magic.
    ///
    /// - Parameters:
    ///   - prefix: the bytes to look at (already bounded).
    ///   - body: the whole body, used to confirm JSON when it is small; nil to
    ///     rely on the prefix alone.
    static func sniffText(prefix: SniffBytes, body: Data?) -> SniffedFormat {
        guard let text = decodeTextPrefix(prefix) else { return .unknown }
        var index = 0
        while index < text.count, isXMLSpace(text[index]) { index += 1 }
        guard index < text.count else { return .text }
        switch text[index] {
        case UInt8(ascii: "<"):
            return classifyMarkup(text, from: index)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            if let body, body.count < jsonParseLimit {
                let parsed = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])
                return parsed != nil ? .json : .text
            }
            return looksLikeJSON(text, from: index) ? .json : .text
        default:
            return .text
        }
    }

    // MARK: Decoding

    /// The prefix as UTF-8 bytes (BOM removed, UTF-16 transcoded, a cut
    /// character at the end dropped), or nil when it is not text: invalid
    /// encoding, a NUL, or more than 1 % control characters.
    static func decodeTextPrefix(_ bytes: SniffBytes) -> [UInt8]? {
        if bytes.has([0xFF, 0xFE]) { return decodeUTF16(bytes, littleEndian: true) }
        if bytes.has([0xFE, 0xFF]) { return decodeUTF16(bytes, littleEndian: false) }
        let start = bytes.has([0xEF, 0xBB, 0xBF]) ? 3 : 0
        var index = start
        var scalars = 0
        var controls = 0
        scan: while index < bytes.count {
            let lead = bytes[index]
            if lead < 0x80 {
                if lead == 0 { return nil }
                if isControl(UInt32(lead)) { controls += 1 }
                scalars += 1
                index += 1
                continue
            }
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xED: length = 3; high = 0x9F
            case 0xE1...0xEF: length = 3
            case 0xF0: length = 4; low = 0x90
            case 0xF4: length = 4; high = 0x8F
            case 0xF1...0xF3: length = 4
            default: return nil
            }
            for offset in 1..<length {
                // A character cut by the end of the prefix is fine.
                guard index + offset < bytes.count else { break scan }
                let continuation = bytes[index + offset]
                let (lowest, highest): (UInt8, UInt8) = offset == 1 ? (low, high) : (0x80, 0xBF)
                guard continuation >= lowest && continuation <= highest else { return nil }
            }
            if lead == 0xC2, bytes[index + 1] < 0xA0 { controls += 1 } // C1 controls
            scalars += 1
            index += length
        }
        guard controls * 100 <= scalars else { return nil }
        return Array(bytes.base[start..<index])
    }

    /// Decodes BOM-marked UTF-16 to UTF-8, applying the same text rules.
    static func decodeUTF16(_ bytes: SniffBytes, littleEndian: Bool) -> [UInt8]? {
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        var index = 2
        while index + 1 < bytes.count {
            let first = UInt16(bytes[index]), second = UInt16(bytes[index + 1])
            units.append(littleEndian ? second << 8 | first : first << 8 | second)
            index += 2
        }
        // A surrogate pair cut by the end of the prefix is fine.
        if let last = units.last, UTF16.isLeadSurrogate(last) { units.removeLast() }
        var output: [UInt8] = []
        output.reserveCapacity(units.count * 2)
        var scalars = 0
        var controls = 0
        var iterator = units.makeIterator()
        var decoder = UTF16()
        decoding: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                if scalar.value == 0 { return nil }
                if isControl(scalar.value) { controls += 1 }
                scalars += 1
                UTF8.encode(scalar) { output.append($0) }
            case .emptyInput:
                break decoding
            case .error:
                return nil
            }
        }
        guard controls * 100 <= scalars else { return nil }
        return output
    }

    /// C0 controls other than tab, LF, FF and CR; DEL; C1 controls.
    static func isControl(_ value: UInt32) -> Bool {
        switch value {
        case 0x09, 0x0A, 0x0C, 0x0D: return false
        case 0x00...0x1F, 0x7F...0x9F: return true
        default: return false
        }
    }

    @inline(__always)
    static func isXMLSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0C
    }

    // MARK: Markup

    /// Walks the prolog (XML declaration, processing instructions, comments,
    /// doctype with an internal subset) to the first element and decides
    /// between SVG, HTML, XML and plain text.
    static func classifyMarkup(_ text: [UInt8], from start: Int) -> SniffedFormat {
        var index = start
        var sawXMLDeclaration = false
        var doctypeIsSVG = false
        /// What to answer when the prefix ends (or turns odd) inside the prolog.
        func undecided() -> SniffedFormat {
            doctypeIsSVG ? .svg : (sawXMLDeclaration ? .xml : .text)
        }
        while true {
            while index < text.count, isXMLSpace(text[index]) { index += 1 }
            guard index < text.count, text[index] == UInt8(ascii: "<") else { return undecided() }
            if hasASCII(text, "<?", at: index) {
                if index == start, hasASCII(text, "<?xml", at: index) { sawXMLDeclaration = true }
                guard let end = find(text, "?>", from: index + 2) else { return undecided() }
                index = end + 2
            } else if hasASCII(text, "<!--", at: index) {
                guard let end = find(text, "-->", from: index + 4) else { return undecided() }
                index = end + 3
            } else if hasASCII(text, "<!doctype", at: index, caseInsensitive: true) {
                var cursor = index + 9
                while cursor < text.count, isXMLSpace(text[cursor]) { cursor += 1 }
                let name = readName(text, from: cursor)
                if name == "html" { return .html }
                if name == "svg" || name.hasSuffix(":svg") { doctypeIsSVG = true }
                guard let end = endOfDoctype(text, from: cursor) else { return undecided() }
                index = end + 1
            } else if hasASCII(text, "<!", at: index) {
                guard let end = find(text, ">", from: index + 2) else { return undecided() }
                index = end + 1
            } else {
                let name = readName(text, from: index + 1)
                guard let first = name.utf8.first,
                      first >= 0x80 || first == UInt8(ascii: "_") || first == UInt8(ascii: ":")
                        || (first >= UInt8(ascii: "a") && first <= UInt8(ascii: "z")) else {
                    return sawXMLDeclaration ? .xml : .text
                }
                let localName = name.split(separator: ":").last.map(String.init) ?? name
                if localName == "svg" { return .svg }
                if htmlTagNames.contains(name) { return .html }
                return .xml
            }
        }
    }

    /// The lowercased name starting at `start` (up to whitespace, `>`, `/`,
    /// `[` or the end).
    static func readName(_ text: [UInt8], from start: Int) -> String {
        var end = start
        while end < text.count {
            let byte = text[end]
            if isXMLSpace(byte) || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "/")
                || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "<") { break }
            end += 1
            if end - start > 256 { break }
        }
        return String(decoding: text[start..<end].map(asciiLower), as: UTF8.self)
    }

    /// The index of the `>` closing a doctype, skipping quoted strings and an
    /// internal subset `[ ... ]` (with its own comments and quoted entity
    /// values); nil when the prefix ends first.
    static func endOfDoctype(_ text: [UInt8], from start: Int) -> Int? {
        var index = start
        var inSubset = false
        while index < text.count {
            let byte = text[index]
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                guard let close = text[(index + 1)...].firstIndex(of: byte) else { return nil }
                index = close + 1
                continue
            case UInt8(ascii: "<") where inSubset && hasASCII(text, "<!--", at: index):
                guard let end = find(text, "-->", from: index + 4) else { return nil }
                index = end + 3
                continue
            case UInt8(ascii: "["):
                inSubset = true
            case UInt8(ascii: "]"):
                inSubset = false
            case UInt8(ascii: ">") where !inSubset:
                return index
            default:
                break
            }
            index += 1
        }
        return nil
    }

    /// True when `pattern` (ASCII) occurs in `text` at `index`.
    static func hasASCII(_ text: [UInt8], _ pattern: String, at index: Int, caseInsensitive: Bool = false) -> Bool {
        let needle = Array(pattern.utf8)
        guard index + needle.count <= text.count else { return false }
        for offset in 0..<needle.count {
            let byte = caseInsensitive ? asciiLower(text[index + offset]) : text[index + offset]
            if byte != needle[offset] { return false }
        }
        return true
    }

    /// The first index at or after `start` where `pattern` (ASCII) occurs.
    static func find(_ text: [UInt8], _ pattern: String, from start: Int) -> Int? {
        let needle = Array(pattern.utf8)
        guard let first = needle.first else { return nil }
        var index = start
        while index + needle.count <= text.count {
            if text[index] == first, hasASCII(text, pattern, at: index) { return index }
            index += 1
        }
        return nil
    }

    // MARK: JSON

    /// Prefix heuristic for JSON too large to parse: after `{` comes a
    /// string key or `}`, after `[` comes a value or `]`.
    static func looksLikeJSON(_ text: [UInt8], from start: Int) -> Bool {
        var index = start + 1
        while index < text.count, isXMLSpace(text[index]) { index += 1 }
        guard index < text.count else { return true }
        let next = text[index]
        if text[start] == UInt8(ascii: "{") {
            return next == UInt8(ascii: "\"") || next == UInt8(ascii: "}")
        }
        return Array("{[\"-0123456789tfn]".utf8).contains(next)
    }
}
