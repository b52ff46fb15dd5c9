@_spi(Benchmarks) import ArtCacheCore
import Foundation
internal import GRDB

extension CacheStore {
    /// True when `error` says the disk is full (SQLITE_FULL, ENOSPC, EDQUOT).
    static func isDiskFull(_ error: any Error) -> Bool {
        if let error = error as? StoreError { return error.code == .storageFull }
        return (error as? DatabaseError)?.resultCode == .SQLITE_FULL
    }

    /// A write that must work on a full disk (purge, eviction): when SQLite
    /// finds no room, the space reserve is freed and the write runs once more.
    /// Errors come back typed (`storage_full`, `database`). Blocking: call it
    /// from the commit thread or the blocking pool.
    func writeMakingRoomBlocking<T>(_ work: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try db.write(work)
        } catch {
            guard Self.isDiskFull(error), blobs.releaseReserveIfFull() else { throw Self.storeError(error, writing: nil) }
            do {
                return try db.write(work)
            } catch {
                throw Self.storeError(error, writing: nil)
            }
        }
    }
}
