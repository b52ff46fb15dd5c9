import ArtCacheCore
import Foundation
import TOMLKit

/// Reading: TOML text and `ARTCACHE_<SECTION>_<KEY>` variables into values
/// checked against the `ConfigKey` table (every key known, every value of
/// its kind and in its range).
extension Configuration {
    /// Parses TOML text into checked values (every key known, every value of its type).
    package static func parse(toml text: String, source: String) throws(ConfigError) -> [String: ConfigValue] {
        try checkTableHeaders(text, source: source)
        try checkArrayValues(text, source: source)
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigError(code: .syntax, source: source, key: nil,
                              message: "TOML syntax error at line \(error.source.begin.line), column \(error.source.begin.column): \(error.description)")
        } catch {
            throw ConfigError(code: .syntax, source: source, key: nil, message: "TOML syntax error: \(error)")
        }
        var values: [String: ConfigValue] = [:]
        for (sectionName, sectionValue) in table {
            guard ConfigKey.sections.contains(sectionName) else {
                throw ConfigError(code: .unknownSection, source: source, key: sectionName,
                                  message: "unknown section [\(sectionName)] (known: \(ConfigKey.sections.joined(separator: ", ")))")
            }
            guard let section = sectionValue.table else {
                throw ConfigError(code: .wrongType, source: source, key: sectionName,
                                  message: "expected a [\(sectionName)] table, found \(sectionValue.type)")
            }
            if sectionName == ConfigKey.presetsSection {
                for (name, value) in section {
                    guard let text = value.string else {
                        throw ConfigError(code: .wrongType, source: source, key: "presets.\(name)",
                                          message: "expected an options string like \"100x100,fit=cover\", found \(value.type)")
                    }
                    values["presets.\(name)"] = .string(text)
                }
                continue
            }
            for (name, value) in section {
                if sectionName == ConfigKey.profilesSection, ConfigKey.lookup(section: sectionName, name: name) == nil {
                    guard let text = value.string else {
                        throw ConfigError(code: .wrongType, source: source, key: "profiles.\(name)",
                                          message: "expected a profile line like \"hosts=*.mzstatic.com size=dimensions\", found \(value.type)")
                    }
                    values["profiles.\(name)"] = .string(text)
                    continue
                }
                guard let key = ConfigKey.lookup(section: sectionName, name: name) else {
                    let known = ConfigKey.all.filter { $0.section == sectionName }.map(\.name)
                    throw ConfigError(code: .unknownKey, source: source, key: "\(sectionName).\(name)",
                                      message: "unknown key (known in [\(sectionName)]: \(known.joined(separator: ", ")))")
                }
                values[key.path] = try convert(value, key: key, source: source)
            }
        }
        return values
    }

    /// toml++ (under TOMLKit) aborts the process on a table header whose
    /// name starts with anything but a bare-key character or a quote (`[.]`,
    /// `[~]`, `[ #]`, `[` + a combining mark): such headers are a syntax
    /// error here, before it sees them. Read as bytes, as toml++ reads them:
    /// as Characters, `[` followed by a combining mark is one grapheme that
    /// is not `[`, and such a line went through unchecked.
    package static func checkTableHeaders(_ text: String, source: String) throws(ConfigError) {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        func startsAName(_ byte: UInt8) -> Bool {
            (0x61...0x7A).contains(byte) || (0x41...0x5A).contains(byte) || (0x30...0x39).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'")
        }
        for (index, line) in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            var rest = line.drop(while: isSpace)
            guard rest.first == UInt8(ascii: "[") else { continue }
            rest = rest.dropFirst()
            if rest.first == UInt8(ascii: "[") { rest = rest.dropFirst() }
            rest = rest.drop(while: isSpace)
            guard let first = rest.first, startsAName(first) else {
                throw ConfigError(code: .syntax, source: source, key: nil,
                                  message: "TOML syntax error at line \(index + 1): a table name must start with a letter, digit, _, - or a quote")
            }
        }
    }

    /// toml++ also aborts (a debug assertion; in release builds, undefined
    /// behaviour) when an array holds `}` where a value should be: `[}` or
    /// `[1, }`, with spaces, line breaks or comments between. Never valid
    /// TOML, so a syntax error here, found by a byte scan that skips strings
    /// and comments as toml++ does. The scan only has to agree with toml++
    /// on text toml++ reads without error up to that point: wherever it
    /// would stop earlier (an unterminated string, say), it never reaches
    /// the value either.
    package static func checkArrayValues(_ text: String, source: String) throws(ConfigError) {
        let bytes = Array(text.utf8)
        var open: [UInt8] = []           // unclosed `[` / `{`, innermost last
        var previous: UInt8 = 0          // last byte outside strings, comments and blanks
        var line = 1
        var index = 0
        func at(_ offset: Int) -> UInt8? { index + offset < bytes.count ? bytes[index + offset] : nil }
        func startsWith(_ quote: UInt8) -> Bool { at(0) == quote && at(1) == quote && at(2) == quote }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x0A:
                line += 1
                index += 1
            case 0x20, 0x09, 0x0D:
                index += 1
            case UInt8(ascii: "#"):
                while index < bytes.count, bytes[index] != 0x0A { index += 1 }
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                let quote = byte
                let escapes = quote == UInt8(ascii: "\"")
                if startsWith(quote) {           // multi-line: up to the next three quotes (and two more, part of it)
                    index += 3
                    while index < bytes.count, !startsWith(quote) {
                        if bytes[index] == 0x0A { line += 1 }
                        index += escapes && bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                    }
                    index += 3
                    var extra = 0
                    while extra < 2, at(0) == quote { index += 1; extra += 1 }
                } else {                         // one line
                    index += 1
                    while index < bytes.count, bytes[index] != quote, bytes[index] != 0x0A {
                        index += escapes && bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                    }
                    if at(0) == quote { index += 1 }
                }
                previous = quote
            default:
                if byte == UInt8(ascii: "}"), previous == UInt8(ascii: "[") || (previous == UInt8(ascii: ",") && open.last == UInt8(ascii: "[")) {
                    throw ConfigError(code: .syntax, source: source, key: nil,
                                      message: "TOML syntax error at line \(line): expected a value or ']' in an array, saw '}'")
                }
                switch byte {
                case UInt8(ascii: "["), UInt8(ascii: "{"): open.append(byte)
                case UInt8(ascii: "]"), UInt8(ascii: "}"): _ = open.popLast()
                default: break
                }
                previous = byte
                index += 1
            }
        }
    }

    private static func convert(_ value: TOMLValueConvertible, key: ConfigKey, source: String) throws(ConfigError) -> ConfigValue {
        func wrongType() -> ConfigError {
            ConfigError(code: .wrongType, source: source, key: key.path,
                        message: "expected \(key.kind.typeName), found \(value.type)")
        }
        func invalid(_ shown: String) -> ConfigError {
            ConfigError(code: .invalidValue, source: source, key: key.path,
                        message: "invalid value \(shown): expected \(key.kind.typeName)")
        }
        switch key.kind {
        case .string:
            guard let string = value.string else { throw wrongType() }
            return .string(string)
        case .choice, .color:
            guard let string = value.string else { throw wrongType() }
            guard let parsed = key.kind.parse(text: string) else { throw invalid("\"\(string)\"") }
            return parsed
        case .bool:
            guard let bool = value.bool else { throw wrongType() }
            return .bool(bool)
        case .list:
            guard let array = value.array else { throw wrongType() }
            var items: [String] = []
            for element in array {
                guard let string = element.string else { throw wrongType() }
                items.append(string)
            }
            return .list(items)
        case .size, .duration, .integer, .ratio:
            if let string = value.string {
                if case .integer = key.kind { throw wrongType() }
                if case .ratio = key.kind { throw wrongType() }
                guard let parsed = key.kind.parse(text: string) else {
                    if string.trimmingCharacters(in: .whitespaces).hasPrefix("-") {
                        throw ConfigError(code: .invalidValue, source: source, key: key.path,
                                          message: "invalid value \"\(string)\": must not be negative")
                    }
                    throw invalid("\"\(string)\"")
                }
                return parsed
            }
            let number: Double
            if let int = value.int { number = Double(int) } else if let double = value.double { number = double } else { throw wrongType() }
            if case .integer = key.kind, value.int == nil { throw wrongType() }
            guard number >= 0 else {
                throw ConfigError(code: .invalidValue, source: source, key: key.path,
                                  message: "invalid value \(value.int.map { String($0) } ?? String(number)): must not be negative")
            }
            guard let parsed = key.kind.parse(number: number) else {
                throw invalid(value.int.map { String($0) } ?? String(number))
            }
            return parsed
        }
    }

    package static func applyEnvironment(_ environment: [String: String], to values: inout [String: ConfigValue]) throws(ConfigError) {
        let prefixes = ConfigKey.sections.map { "ARTCACHE_\($0.uppercased())_" }
        for (variable, text) in environment.sorted(by: { $0.key < $1.key }) where prefixes.contains(where: variable.hasPrefix) {
            if variable.hasPrefix("ARTCACHE_PRESETS_") {
                values["presets.\(variable.dropFirst("ARTCACHE_PRESETS_".count).lowercased())"] = .string(text)
                continue
            }
            if variable.hasPrefix("ARTCACHE_PROFILES_"), !ConfigKey.all.contains(where: { $0.environmentName == variable }) {
                values["profiles.\(variable.dropFirst("ARTCACHE_PROFILES_".count).lowercased())"] = .string(text)
                continue
            }
            guard let key = ConfigKey.all.first(where: { $0.environmentName == variable }) else {
                throw ConfigError(code: .unknownKey, source: "environment", key: variable,
                                  message: "unknown setting (variables are ARTCACHE_<SECTION>_<KEY> for keys of cache.conf)")
            }
            guard let value = key.kind.parse(text: text) else {
                throw ConfigError(code: .invalidValue, source: "environment", key: variable,
                                  message: "invalid value \"\(text)\": expected \(key.kind.typeName)")
            }
            values[key.path] = value
        }
    }
}
