import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
    /// sentence for `--help` and the README.
    package static let trustRule = "./cache.conf, the user's file and \(systemPath) are read only when owned by "
        + "the user running artcache (or root) and not writable by group or others; any other is skipped with a warning"

    /// ``locate(explicitPath:environment:currentDirectory:systemPath:)``
    /// with the text of a found file and the files skipped on the way: a
    /// found file is used only when ``examine(_:owner:)`` trusts it.
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
        // link itself is what ``examine(_:owner:)`` must see.
        func found(_ path: String) -> String { path.hasPrefix("/") ? path : (currentDirectory as NSString).appendingPathComponent(path) }
        var lookup = ConfigLookup()
        for path in [found("cache.conf"), (configHome as NSString).appendingPathComponent("artcache/cache.conf"), found(systemPath)] {
            switch examine(path, owner: owner) {
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

    /// A found configuration file as the lookup sees it.
    package enum FoundFile: Sendable, Equatable {
        case missing
        /// Exists, but someone else's or writable by others: passed over.
        case refused(String)
        /// Its text and the path of the file opened (a symlink resolved: a
        /// relative `[cache] directory` is relative to the file's folder).
        case trusted(String, realPath: String)
        /// Ours, but unreadable (or not UTF-8): an error, as a named file's would be.
        case failed(ConfigError)
    }

    /// Opens `path` (a symlink is followed, but the link itself must be
    /// `owner`'s or root's as well: another user's link to their own file is
    /// refused) and checks the opened file: a regular file, owned by `owner`
    /// or root, not writable by group or others. The text is read from the
    /// checked descriptor.
    package static func examine(_ path: String, owner: uid_t) -> FoundFile {
        var link = stat()
        guard lstat(path, &link) == 0 else { return .missing }  // ENOENT, ENOTDIR...: nothing there
        if link.st_mode & S_IFMT == S_IFLNK, link.st_uid != owner, link.st_uid != 0 {
            return .refused("a symlink owned by uid \(link.st_uid), not by uid \(owner) or root")
        }
        // O_NONBLOCK: a FIFO planted under the name must not hang the CLI (refused below).
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return .missing }  // a dangling symlink, as before
            return .failed(ConfigError(code: .unreadable, source: path, key: nil,
                                       message: "cannot open: \(String(cString: strerror(code)))"))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            return .failed(ConfigError(code: .unreadable, source: path, key: nil, message: "cannot stat: \(String(cString: strerror(errno)))"))
        }
        guard info.st_mode & S_IFMT == S_IFREG else { return .refused("not a regular file") }
        guard info.st_uid == owner || info.st_uid == 0 else {
            return .refused("owned by uid \(info.st_uid), not by uid \(owner) or root")
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            return .refused("writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8)))")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                return .failed(ConfigError(code: .unreadable, source: path, key: nil, message: "cannot read: \(String(cString: strerror(errno)))"))
            }
            bytes.append(contentsOf: buffer[..<n])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failed(ConfigError(code: .unreadable, source: path, key: nil, message: "cannot read: not UTF-8 text"))
        }
        // The file actually opened (the descriptor's own link names it).
        var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/fd/\(fd)", &target, target.count - 1)
        let realPath = length > 0 && target[0] == 0x2F ? String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : path
        return .trusted(text, realPath: realPath)
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
            return try Configuration(values: values, file: path)
        } catch {
            throw ArtCacheError(error)
        }
    }
}
