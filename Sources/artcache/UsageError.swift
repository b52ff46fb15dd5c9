import ArgumentParser
import ArtCachePipeline
import ArtCacheServiceGrammar
import Foundation

/// Bad usage found only once the configuration is read (a `--size` past
/// `thumbnails.max_output`): one line on stderr and exit 64, as
/// ArgumentParser's own `validate()` failures exit (``reportingErrors(json:_:)``).
struct UsageError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}

/// The checks of flags shared by several commands, each failure in the
/// flag's own words (thrown from `validate()`: exit 64 before anything opens).
enum Arguments {
    /// `--size WIDTHxHEIGHT`: each side a whole number of at least 1. The
    /// upper bound is the configuration's (`thumbnails.max_output`), checked
    /// by ``box(_:flag:maxOutput:)`` once it is read.
    static func box(_ text: String, flag: String = "--size") throws -> (width: Int, height: Int) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }) else {
            throw ValidationError("\(flag) \(text): expected WIDTHxHEIGHT, e.g. 100x100")
        }
        // More digits than an Int holds is larger than any limit.
        let sides = parts.map { Int($0) ?? Int.max }
        guard sides.allSatisfy({ $0 >= 1 }) else { throw ValidationError("\(flag) \(text): each side must be at least 1") }
        return (sides[0], sides[1])
    }

    /// ``box(_:flag:)`` within `thumbnails.max_output`; past it a ``UsageError``.
    static func box(_ text: String, flag: String = "--size", maxOutput: Int) throws -> (width: Int, height: Int) {
        let box = try box(text, flag: flag)
        guard box.width <= maxOutput, box.height <= maxOutput else {
            throw UsageError("\(flag) \(text) is larger than thumbnails.max_output (\(maxOutput))")
        }
        return box
    }

    /// `--quality Q`: 1 to 100, `thumbnails.quality`'s range.
    static func quality(_ value: Int?) throws {
        guard let value else { return }
        let range = integerRange("thumbnails", "quality")
        guard range.contains(value) else {
            throw ValidationError("--quality \(value): must be from \(range.lowerBound) to \(range.upperBound)")
        }
    }

    /// `--concurrency N`: within `download.concurrency`'s range (1 to 1024).
    static func concurrency(_ value: Int?) throws {
        guard let value else { return }
        let range = integerRange("download", "concurrency")
        guard range.contains(value) else {
            throw ValidationError("--concurrency \(value): must be from \(range.lowerBound) to \(range.upperBound) "
                                  + "(download.concurrency's range)")
        }
    }

    /// `--listen HOST:PORT`: an IP address or name, and a port from 0 to 65535.
    static func listen(_ text: String) throws -> (host: String, port: Int) {
        if let parsed = ServiceSettings.parseListen(text) { return parsed }
        if let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), !(0...65535).contains(port) {
            throw ValidationError("--listen \(text): port \(port) is out of range (0 to 65535; 0 picks a free one)")
        }
        throw ValidationError("--listen \(text): expected HOST:PORT like 127.0.0.1:8080 or [::1]:8080")
    }

    /// The inclusive range of an integer key of `cache.conf`, as its table states it.
    private static func integerRange(_ section: String, _ name: String) -> ClosedRange<Int> {
        guard let range = ConfigKey.lookup(section: section, name: name)?.kind.numericRange else {
            fatalError("\(section).\(name) has no range in ConfigKey.all")  // a bug, caught by the CLI tests
        }
        return Int(range.lowerBound)...Int(range.upperBound)
    }
}
