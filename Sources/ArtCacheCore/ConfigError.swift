import Foundation

/// A configuration problem: names the file (or variable), the key and what was wrong.
package struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Code: String, Sendable {
        case fileNotFound = "file_not_found"
        case unreadable
        case syntax
        case unknownSection = "unknown_section"
        case unknownKey = "unknown_key"
        case wrongType = "wrong_type"
        case invalidValue = "invalid_value"
    }

    package let code: Code
    /// The file or environment variable the problem came from.
    package let source: String
    /// `section.key`, when the problem is about one key.
    package let key: String?
    package let message: String

    package init(code: Code, source: String, key: String?, message: String) {
        self.code = code
        self.source = source
        self.key = key
        self.message = message
    }

    package var description: String {
        if let key { return "\(source): \(key): \(message)" }
        return "\(source): \(message)"
    }
}

extension ArtCacheError {
    /// A configuration problem as the public error: code `.configuration`,
    /// the message naming the file (or variable) and the key; the
    /// ``ConfigError`` is kept as `underlying`.
    package init(_ error: ConfigError) {
        self.init(.configuration, error.description, underlying: error)
    }
}
