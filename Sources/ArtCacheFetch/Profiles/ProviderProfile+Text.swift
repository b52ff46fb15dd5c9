import Foundation

/// The `[profiles]` line syntax: space-separated `key=value` fields.
///
/// - `hosts=` (required): comma-separated host patterns as in
///   `allowed_sources` (`example.com`, `*.example.com`);
/// - `size=` (required), the size rule:
///   - `query:NAME` or `query:NAME:ABSENT` — a query parameter holds the
///     size (`?s=460`); ABSENT is the size the origin gives without it
///     (omitted: the original);
///   - `dimensions` — `{W}x{H}` in the last path segment (`100x100bb.jpg`);
///   - `suffixes:SUFFIX=SIZE,...` — the last path segment's stem ends with
///     one of these suffixes, smallest first; `=original` is the stem with
///     no suffix (`_normal=48,_400x400=400,=original`);
/// - `path=TEXT`: the URL's path must contain TEXT;
/// - `max=N`: the largest size a `query` or `dimensions` rule asks for
///   (default 4096).
extension ProviderProfile {
    /// A line of `[profiles]` that does not parse.
    package struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        package let description: String
    }

    package init(name: String, text: String) throws(Invalid) {
        var fields: [String: String] = [:]
        for field in text.split(whereSeparator: \.isWhitespace) {
            guard let equals = field.firstIndex(of: "=") else {
                throw Invalid(description: "\"\(field)\" is not key=value (keys: hosts, size, path, max)")
            }
            let key = String(field[..<equals])
            guard ["hosts", "size", "path", "max"].contains(key) else {
                throw Invalid(description: "unknown field \"\(key)\" (known: hosts, size, path, max)")
            }
            guard fields[key] == nil else { throw Invalid(description: "\"\(key)\" given twice") }
            fields[key] = String(field[field.index(after: equals)...])
        }
        guard let hostList = fields["hosts"], !hostList.isEmpty else { throw Invalid(description: "hosts= is required") }
        var hosts: [HostPattern] = []
        for text in hostList.split(separator: ",") {
            guard let pattern = HostPattern(String(text)), pattern.description != "*" else {
                throw Invalid(description: "\"\(text)\" is not a host pattern (example.com or *.example.com)")
            }
            hosts.append(pattern)
        }
        guard let sizeText = fields["size"] else { throw Invalid(description: "size= is required (query:NAME, dimensions or suffixes:...)") }
        let rule = try Self.rule(sizeText)
        var max = 4096
        if let text = fields["max"] {
            guard let value = Int(text), (1...100_000).contains(value) else {
                throw Invalid(description: "max=\(text) is not a size from 1 to 100000")
            }
            max = value
        }
        if let path = fields["path"], path.isEmpty { throw Invalid(description: "path= is empty") }
        self.init(name: name, hosts: hosts, pathContains: fields["path"], rule: rule, max: max)
    }

    private static func rule(_ text: String) throws(Invalid) -> SizeRule {
        if text == "dimensions" { return .dimensions }
        if text.hasPrefix("query:") {
            let parts = text.dropFirst("query:".count).split(separator: ":", omittingEmptySubsequences: false)
            guard let name = parts.first, !name.isEmpty, parts.count <= 2 else {
                throw Invalid(description: "size=\(text): expected query:NAME or query:NAME:ABSENT")
            }
            var absent: Int?
            if parts.count == 2 {
                guard let value = Int(parts[1]), value > 0 else { throw Invalid(description: "size=\(text): ABSENT must be a size") }
                absent = value
            }
            return .query(name: String(name), absent: absent)
        }
        if text.hasPrefix("suffixes:") {
            var steps: [Step] = []
            for entry in text.dropFirst("suffixes:".count).split(separator: ",") {
                guard let equals = entry.firstIndex(of: "=") else {
                    throw Invalid(description: "size=\(text): \"\(entry)\" is not SUFFIX=SIZE")
                }
                let suffix = String(entry[..<equals]), value = entry[entry.index(after: equals)...]
                if value == "original" {
                    steps.append(Step(suffix: suffix, size: nil))
                } else {
                    guard let size = Int(value), size > 0 else { throw Invalid(description: "size=\(text): \"\(value)\" is not a size") }
                    steps.append(Step(suffix: suffix, size: size))
                }
            }
            let sizes = steps.map { $0.size ?? .max }
            guard !steps.isEmpty, sizes == sizes.sorted(), Set(sizes).count == sizes.count else {
                throw Invalid(description: "size=\(text): the suffixes must be listed smallest first, each size once")
            }
            return .suffixes(steps)
        }
        throw Invalid(description: "size=\(text): expected query:NAME, dimensions or suffixes:SUFFIX=SIZE,...")
    }
}
