import ArtCacheCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension CacheStore {
    /// The permission bits an open works with: `[cache] mode` when it may
    /// create the cache (``CacheSettings/Access/create``); for
    /// ``CacheSettings/Access/existing``, after checking that a cache is
    /// there (its index file), the cache folder's own bits, so that nothing
    /// it finds changes mode and what it creates (lock files) matches.
    static func openingMode(_ settings: CacheSettings, directory: URL) throws(StoreError) -> mode_t {
        guard settings.access == .existing else { return mode_t(settings.mode) }
        var folder = stat(), index = stat()
        guard stat(directory.path, &folder) == 0, folder.st_mode & S_IFMT == S_IFDIR,
              lstat(directory.path + "/index.sqlite", &index) == 0, index.st_mode & S_IFMT == S_IFREG else {
            throw StoreError(.noCache, "no cache at \(directory.path)")
        }
        return folder.st_mode & 0o777
    }
}
