import ArtCacheCore
import ArtCacheFetch
import ArtCacheStore
import Foundation

/// One download per URL across the processes on one cache (issue 49): the
/// index's lease (``DownloadLeases``) names the process downloading a URL;
/// another one that misses the same URL meanwhile waits for that result —
/// the original it stores, or its failure — instead of asking the origin too.
extension Originals {
    /// The lease a load took, if any: given up by ``original(_:mode:behind:pixels:staleOK:priority:)``
    /// once the result is recorded (the original committed, the failure queued).
    final class LeaseHold: Sendable {
        private let key = Locked<String?>(nil)

        func take(_ key: String) { self.key.withLock { $0 = key } }
        var held: String? { key.withLock { $0 } }
    }

    /// A failure another process had with the URL it held the lease on:
    /// not recorded again here (the holder did).
    struct LeaseHolderFailure: Error, Sendable {
        let pid: Int32
    }

    /// How long a lease lasts unless given up: the longest a download may
    /// take with its retries (a live holder gives it up sooner; a dead
    /// holder's lapses at once).
    var leaseDuration: TimeInterval {
        let d = configuration.download
        return d.connectTimeout + d.timeout * Double(d.retries + 1) + d.retryMaxDelay * Double(d.retries)
    }

    /// How long a holder's failure (and the lease of an original stored
    /// behind the answer, not committed yet) stays for the processes waiting on it.
    static let leaseLinger: TimeInterval = 5

    /// Before downloading `url`: takes the index's lease on it (into `lease`,
    /// and returns nil: download), or, while another live process holds it,
    /// waits for that one's result: the original it stored (returned, as
    /// cached) or its failure (thrown). A lease that lapses (its holder
    /// died, or gave it up without a result) is taken here. `reload`: only
    /// the lease is waited for (what is stored is what a reload replaces).
    func awaitLease(_ url: NormalizedURL, lease: LeaseHold, reload: Bool) async throws -> FetchOutcome? {
        let key = url.key.hex
        var pause: Duration = .milliseconds(20)
        var waited = false
        while true {
            let claim: DownloadLeases.Claim
            do {
                claim = try await store.leases.claim(key: key, url: url.string, for: leaseDuration, waited: waited)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                // The index cannot be written: download without a lease (the store will say more).
                logger.warning("cannot take a download lease", metadata: ["url": "\(url)", "error": "\(error)"])
                return nil
            }
            switch claim {
            case .acquired:
                lease.take(key)
                // The holder waited on may have stored it just before giving the lease up.
                if waited, !reload, let stored = try await storedByHolder(url) { return stored }
                return nil
            case .failed(let pid, let reason, let message):
                guard let code = ArtCacheError.Code(reason: reason) else { break }
                throw ArtCacheError(code, "\(message) (the download of process \(pid), waited for)",
                                    underlying: LeaseHolderFailure(pid: pid))
            case .held(let pid, _):
                if !waited { logger.debug("waiting for the download of another process", metadata: ["url": "\(url)", "pid": "\(pid)"]) }
                waited = true
                if !reload, let stored = try await storedByHolder(url) { return stored }
            }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(250))
        }
    }

    private func storedByHolder(_ url: NormalizedURL) async throws -> FetchOutcome? {
        guard let hit = try await store.lookup(key: url.key, counting: false) else { return nil }
        return FetchOutcome(source: .cached, entry: hit.entry, data: hit.data, repaired: false, downloadedBytes: 0)
    }

    /// Gives up the lease a load took: at once after a committed original
    /// (or a failure of this process's own), after ``leaseLinger`` for one
    /// stored behind the answer (another process sees it once committed) or
    /// with a failure others waiting take as theirs.
    func release(_ lease: LeaseHold, behind: Bool, failure: (any Error)? = nil) async {
        guard let key = lease.held else { return }
        let shared = failure.flatMap(Self.sharedFailure)
        let linger = shared != nil || (failure == nil && behind) ? Self.leaseLinger : 0
        do {
            try await store.leases.release(key: key, failure: shared, linger: linger)
        } catch {
            logger.warning("cannot give a download lease up", metadata: ["key": "\(key)", "error": "\(error)"])
        }
    }

    /// A failure of the origin or the network, which a process waiting on
    /// the lease would meet too: (reason, message). Not a cancellation, not
    /// the store's, not this process's own state (an open host breaker, a
    /// full host queue), not one taken from another holder.
    static func sharedFailure(_ error: any Error) -> (reason: String, message: String)? {
        let error = ArtCacheError(any: error, context: "")
        if error.underlying is LeaseHolderFailure { return nil }
        switch error.code {
        case .network(.hostOffline), .network(.queueFull): return nil
        case .network, .httpStatus, .notAnImage, .unsupported, .tooLarge:
            // Only what a waiting process can type again (ArtCacheError.Code(reason:)).
            return ArtCacheError.Code(reason: error.reason) == nil ? nil : (error.reason, error.message)
        default: return nil
        }
    }

    /// Whether `error` is a failure taken from another lease holder (recorded by it).
    static func isHolderFailure(_ error: any Error) -> Bool {
        (error as? ArtCacheError)?.underlying is LeaseHolderFailure
    }
}

extension ArtCacheError.Code {
    /// The code whose ``ArtCacheError/reason`` is `reason`, among those a
    /// download ends with (`timeout`, `http_503`, `not_an_image`...).
    init?(reason: String) {
        if reason.hasPrefix("http_"), let status = Int(reason.dropFirst(5)) {
            self = .httpStatus(status)
        } else if let network = ArtCacheError.NetworkReason(rawValue: reason) {
            self = .network(network)
        } else {
            switch reason {
            case "not_an_image": self = .notAnImage
            case "unsupported": self = .unsupported
            case "too_large": self = .tooLarge
            default: return nil
            }
        }
    }
}
