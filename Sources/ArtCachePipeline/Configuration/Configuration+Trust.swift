import ArtCacheCore
import Foundation

/// What the CLI's lookup found: the file to read, its text when the lookup
/// read it itself, and the files it passed over with the reason.
///
/// `./cache.conf`, the user's file and the system's are found, not named:
/// in a shared folder another user's `cache.conf` would otherwise decide
/// where a root `artcache` creates files and which mode it gives them. Each
/// is opened once, its owner and mode checked on the open descriptor
/// (`fstat`) and its text read from that same descriptor, so nothing can be
/// swapped in between the check and the read.
package struct ConfigLookup: Sendable, Equatable {
    /// A file the lookup would not read, and why (the CLI says so on stderr).
    package struct Skipped: Sendable, Equatable, CustomStringConvertible {
        package let path: String
        package let reason: String
        package var description: String { "\(path): \(reason); not read" }
    }

    /// The file chosen (absolute), nil for the built-in defaults.
    package var path: String?
    /// Its text, read from the descriptor that was checked; nil for a file
    /// named with `--config` or `$ARTCACHE_CONFIG` (read as it is named).
    package var text: String?
    /// A found file that could not be read (the error ``Configuration/load(_:environment:)`` throws).
    package var failure: ConfigError?
    package var skipped: [Skipped] = []
}

extension Configuration {
    /// The rule for the files the lookup finds rather than is given, in one
    /// sentence for `--help` and docs/configuration.md.
    package static let trustRule = "./cache.conf, the user's file and \(systemPath) are read only when owned by "
        + "the user running artcache (or root) and not writable by group or others; any other is skipped with a warning"

    /// ``locate(explicitPath:environment:currentDirectory:systemPath:)``
    /// with the text of a found file and the files skipped on the way: a
    /// found file is used only when `ConfigFile.examine(_:owner:)` trusts it.
    package static func lookUp(explicitPath: String?, environment: [String: String],
                               currentDirectory: String = FileManager.default.currentDirectoryPath,
                               systemPath: String = Configuration.systemPath, owner: uid_t = geteuid()) -> ConfigLookup {
        func absolute(_ path: String) -> String {
            let expanded = expandTilde(path, environment: environment)
            let full = expanded.hasPrefix("/") ? expanded : (currentDirectory as NSString).appendingPathComponent(expanded)
            return (full as NSString).standardizingPath
        }
        if let explicitPath { return ConfigLookup(path: absolute(explicitPath)) }
        if let fromEnv = environment["ARTCACHE_CONFIG"], !fromEnv.isEmpty { return ConfigLookup(path: absolute(fromEnv)) }
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        // Joined, not standardized: standardizing resolves symlinks, and the
        // link itself is what `ConfigFile.examine` must see.
        func found(_ path: String) -> String { path.hasPrefix("/") ? path : (currentDirectory as NSString).appendingPathComponent(path) }
        var lookup = ConfigLookup()
        for path in [found("cache.conf"), (configHome as NSString).appendingPathComponent("artcache/cache.conf"), found(systemPath)] {
            switch ConfigFile.examine(path, owner: owner) {
            case .missing:
                continue
            case .refused(let reason):
                lookup.skipped.append(.init(path: path, reason: reason))
            case .trusted(let text, let realPath):
                lookup.path = realPath
                lookup.text = text
                return lookup
            case .failed(let error):
                lookup.path = path
                lookup.failure = error
                return lookup
            }
        }
        return lookup
    }

    /// Loads what ``lookUp(explicitPath:environment:currentDirectory:systemPath:owner:)``
    /// found (the text it read, or the named file) and applies environment
    /// overrides, as ``load(path:environment:)`` does.
    package static func load(_ lookup: ConfigLookup,
                             environment: [String: String] = ProcessInfo.processInfo.environment) throws(ArtCacheError) -> Configuration {
        do throws(ConfigError) {
            if let failure = lookup.failure { throw failure }
            guard let path = lookup.path, let text = lookup.text else { return try read(path: lookup.path, environment: environment) }
            var values = try parse(toml: text, source: path)
            try applyEnvironment(environment, to: &values)
            return try Configuration(values: values, file: path, environment: environment)
        } catch {
            throw ArtCacheError(error)
        }
    }
}
