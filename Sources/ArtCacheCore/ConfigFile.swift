import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A configuration file found rather than named (`./cache.conf`, the user's,
/// the system's), checked before it is trusted (docs/configuration.md).
package enum ConfigFile {
    /// A found configuration file as the lookup sees it.
    package enum Found: Sendable, Equatable {
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
    package static func examine(_ path: String, owner: uid_t) -> Found {
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
}
