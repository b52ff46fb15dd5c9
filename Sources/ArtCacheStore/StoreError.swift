import ArtCacheCore
import Foundation
internal import GRDB

/// Errors from the store and index: a stable code plus a human message.
package struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Code: String, Sendable, Codable {
        /// The URL is not an absolute http(s) URL with a host.
        case invalidURL = "invalid_url"
        /// The parent of a variant is not in the cache.
        case missingParent = "missing_parent"
        /// The original changed after the variant was rendered from it: the
        /// variant is not stored (it would outlive the bytes it shows).
        case staleSource = "stale_source"
        /// A request selected nothing (e.g. purge without a selector).
        case invalidRequest = "invalid_request"
        /// File system trouble in the cache directory.
        case io
        /// The cache's disk (or quota) is full: ENOSPC, EDQUOT or SQLITE_FULL.
        /// Nothing partial is stored; purging or freeing space makes writes work again.
        case storageFull = "storage_full"
        /// SQLite trouble that is not a busy wait.
        case database
        /// The cache directory is used by a newer artcache.
        case incompatibleSchema = "incompatible_schema"
        /// An open that must find a cache (``CacheSettings/Access/existing``) found none.
        case noCache = "no_cache"
        /// The store is closed (or closing): a put that came too late.
        /// Nothing of it was written.
        case closed
    }

    package let code: Code
    package let message: String
    /// For `.database`: SQLite's extended result code, when SQLite failed.
    package let sqliteCode: Int32?

    package init(_ code: Code, _ message: String, sqliteCode: Int32? = nil) {
        self.code = code
        self.message = message
        self.sqliteCode = sqliteCode
    }

    package var description: String { message }

    /// A row named a parent that is gone (SQLITE_CONSTRAINT_FOREIGNKEY).
    var isForeignKeyViolation: Bool { sqliteCode == ResultCode.SQLITE_CONSTRAINT_FOREIGNKEY.rawValue }
}

extension NormalizedURL {
    /// Normalizes a URL handed to the store, as a store error.
    package static func forStore(_ text: String) throws(StoreError) -> NormalizedURL {
        do {
            return try NormalizedURL(text)
        } catch {
            throw StoreError(.invalidURL, error.message)
        }
    }
}

extension ArtCacheError {
    /// A store failure in the public error's terms (kept as `underlying`).
    package init(_ error: StoreError) {
        let code: Code = switch error.code {
        case .invalidURL: .invalidURL
        case .invalidRequest: .invalidRequest
        case .missingParent, .staleSource, .io, .database, .noCache: .storage
        case .incompatibleSchema: .incompatibleSchema
        case .storageFull: .storageFull
        // The cache closes when its pipeline does: to a caller, its request was cancelled.
        case .closed: .cancelled
        }
        self.init(code, error.message, underlying: error)
    }
}
