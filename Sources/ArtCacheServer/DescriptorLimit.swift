import ArtCacheServiceGrammar
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The process's open-file limit, fitted to the service at start (`serve`):
/// the soft `RLIMIT_NOFILE` is raised to the hard limit (as Go's runtime
/// does; the soft default of 1024 is a relic of `select`), and when
/// `[service] max_connections` plus what the cache itself needs (index,
/// blobs, downloads, logs) still does not fit, `max_connections` is lowered
/// to what does, so idle connections can never take the descriptors that
/// `/health`, the index and the downloads need.
package enum DescriptorLimit {
    /// Descriptors kept for the cache itself: SQLite and its WAL, blob
    /// files being read and written, the log, libcurl's resolver and
    /// sockets (two per download at most), the listener, the event loops.
    package static func reserve(downloads: Int) -> Int { 128 + 2 * downloads }

    /// What ``fit(_:downloads:)`` did.
    package struct Fitted: Sendable, Equatable {
        /// The soft limit now in force (nil: unlimited or unknown).
        package var limit: Int?
        /// `max_connections` as it is now.
        package var maxConnections: Int
        /// One line saying what was lowered and why, when it was.
        package var warning: String?
    }

    /// Raises the soft limit to the hard one, then fits `service.maxConnections`.
    package static func fit(_ service: inout ServiceSettings, downloads: Int) -> Fitted {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else {
            return Fitted(limit: nil, maxConnections: service.maxConnections)
        }
        if limits.rlim_cur < limits.rlim_max {
            var raised = limits
            raised.rlim_cur = limits.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limits = raised }
        }
        guard limits.rlim_cur < rlim_t(Int32.max) else {  // RLIM_INFINITY, or more than anyone needs
            return Fitted(limit: nil, maxConnections: service.maxConnections)
        }
        let fitted = fitted(maxConnections: service.maxConnections, limit: Int(limits.rlim_cur), downloads: downloads)
        service.maxConnections = fitted.maxConnections
        return fitted
    }

    /// `maxConnections` within `limit` descriptors, `reserve` kept (pure: the rule ``fit(_:downloads:)`` applies).
    package static func fitted(maxConnections: Int, limit: Int, downloads: Int) -> Fitted {
        let reserve = reserve(downloads: downloads)
        let room = max(1, limit - reserve)
        guard maxConnections > room else { return Fitted(limit: limit, maxConnections: maxConnections) }
        return Fitted(limit: limit, maxConnections: room,
                      warning: "service.max_connections lowered from \(maxConnections) to \(room): the open-file limit is \(limit) "
                          + "(ulimit -n; LimitNOFILE=) and the cache keeps \(reserve) for itself")
    }
}
