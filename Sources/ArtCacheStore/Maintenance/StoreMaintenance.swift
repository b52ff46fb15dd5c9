import ArtCacheCore
import Foundation
internal import GRDB
import Logging

/// What an operator runs on a cache, as opposed to what requests do:
/// `verify` (and its repair), `purge`, `stats`. It holds no state of its
/// own; it works on the store's index and blobs, waiting for the store's
/// writes in flight first where a report must count them. Callers reach it
/// through the store (``CacheStore/maintenance``, or the store's façade
/// methods `verify`, `purge` and `stats`).
package struct StoreMaintenance: Sendable {
    let store: CacheStore

    var db: DatabasePool { store.db }
    var blobs: BlobStore { store.blobs }
    var settings: CacheSettings { store.settings }
    var directory: URL { store.directory }
    var logger: Logger { store.logger }
}
