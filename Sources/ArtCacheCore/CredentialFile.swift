import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A secret handed over as a systemd credential: the unit's
/// `LoadCredential=NAME:/etc/artcache/FILE` has systemd read the root-only
/// file before it drops privileges and give the service a copy as
/// `$CREDENTIALS_DIRECTORY/NAME` (a private mount only the service's
/// processes see), so the secret is never in the environment, where every
/// process of the service's user could read it from `/proc/PID/environ`.
/// The signing keys (`keys`) and the second tier's keys (`tier2`) come
/// this way; each owner parses its own text.
package enum CredentialFile {
    /// The most a credential may hold (a keys file of a thousand keys is 65 KB).
    package static let maxBytes = 256 << 10

    /// The text of `$CREDENTIALS_DIRECTORY/name` and its path; nil when the
    /// variable is unset or empty or the folder holds no `name` (nothing
    /// handed over). Checked before it is trusted, on the descriptor read:
    /// not a symlink (`O_NOFOLLOW`: systemd's copies never are), a regular
    /// file, owned by this user or root, not writable by group or others,
    /// at most ``maxBytes``, UTF-8. A file that is there and fails any of
    /// these is an error naming it (under `key`): a credential that cannot
    /// be used must not quietly fall back to other keys.
    package static func read(_ name: String, environment: [String: String], key: String) throws(ConfigError) -> (text: String, path: String)? {
        guard let folder = environment["CREDENTIALS_DIRECTORY"], !folder.isEmpty else { return nil }
        let path = (folder as NSString).appendingPathComponent(name)
        func refused(_ why: String) -> ConfigError {
            ConfigError(code: .unreadable, source: path, key: key, message: "cannot read the \(name) credential: \(why)")
        }
        // O_NONBLOCK: a FIFO planted under the name must not hang the service (refused below).
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            throw refused(code == ELOOP ? "a symlink (not followed)" : FileErrorText.system(code))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw refused(FileErrorText.system(errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw refused(info.st_mode & S_IFMT == S_IFDIR ? FileErrorText.system(EISDIR) : "not a regular file")
        }
        let owner = geteuid()
        guard info.st_uid == owner || info.st_uid == 0 else {
            throw refused("owned by uid \(info.st_uid), not by uid \(owner) or root")
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw refused("writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8)))")
        }
        guard info.st_size <= maxBytes else { throw refused("larger than \(Units.formatSize(Int64(maxBytes)))") }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while bytes.count <= maxBytes {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw refused(FileErrorText.system(errno))
            }
            bytes.append(contentsOf: buffer[..<n])
        }
        guard bytes.count <= maxBytes else { throw refused("larger than \(Units.formatSize(Int64(maxBytes)))") }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigError(code: .unreadable, source: path, key: key, message: "the \(name) credential is not UTF-8 text")
        }
        return (text, path)
    }
}
