import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a writer is about to rename into `objects/`: `tmp/<token>.renames`,
/// the blob paths of the batch being committed, written before its first
/// rename and emptied once the batch committed or undid its renames. A
/// writer killed in between leaves blob files no row names; the journal says
/// which, so the next open of the cache (``BlobStore/sweepDeadWriters(isNamed:)``)
/// removes exactly those, and `verify` is clean again without `--repair`
/// and without listing `objects/`.
///
/// Written without fsync: a `kill -9` keeps what was written (the page
/// cache survives the process); after a power loss the journal may miss a
/// batch, and its orphans wait for `verify --repair`, as before.
///
/// `@unchecked Sendable` is sound: `fd` is read and written only inside
/// `state.withLock`; the journal is used by the write queue's one thread.
final class RenameJournal: @unchecked Sendable {
    static let suffix = ".renames"
    private let state = Locked<Int32?>(nil)
    private let folder: String
    private let name: String
    private let mode: mode_t

    init(folder: String, token: String, mode: mode_t) {
        self.folder = folder
        name = token + Self.suffix
        self.mode = mode
    }

    // Only the descriptor: no file I/O in a deinit (an unclosed store's
    // journal is swept by the next open, as a dead writer's).
    deinit { state.withLock { fd in if let fd { Glibc.close(fd) } } }

    /// Records the blob paths about to be renamed into place (appends: the
    /// file is emptied by ``clear()`` after each batch).
    func record(_ paths: [String]) throws(StoreError) {
        guard !paths.isEmpty else { return }
        let text = Data(paths.map { $0 + "\n" }.joined().utf8)
        let failure: Int32? = state.withLock { fd -> Int32? in
            if fd == nil {
                guard let tmp = try? DirectoryHandle(path: folder) else { return ENOENT }
                let opened = tmp.openFile(name, flags: O_WRONLY | O_CREAT | O_APPEND, mode: mode)
                guard opened >= 0 else { return errno }
                fd = opened
            }
            return text.withUnsafeBytes { buffer -> Int32? in
                var offset = 0
                while offset < buffer.count {
                    let n = write(fd!, buffer.baseAddress! + offset, buffer.count - offset)
                    if n < 0 {
                        if errno == EINTR { continue }
                        return errno
                    }
                    offset += n
                }
                return nil
            }
        }
        if let failure { throw StoreError.io("cannot write \(folder)/\(name)", errno: failure) }
    }

    /// Empties the journal: every path it named is committed or removed.
    func clear() {
        state.withLock { fd in
            if let fd { _ = ftruncate(fd, 0) }
        }
    }

    /// Closes and removes the journal (the writer's `close()`).
    func close() {
        state.withLock { fd in
            guard let open = fd else { return }
            Glibc.close(open)
            fd = nil
            unlink(folder + "/" + name)
        }
    }

    /// The blob paths a (dead) writer's journal lists; empty when it has none.
    static func paths(token: String, in tmp: DirectoryHandle) -> [String] {
        let fd = tmp.openFile(token + suffix, flags: O_RDONLY)
        guard fd >= 0 else { return [] }
        defer { Glibc.close(fd) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while data.count < 64 << 20 {  // a batch names at most write_batch_max paths; bounded anyway
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
