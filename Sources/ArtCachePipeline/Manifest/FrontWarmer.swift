import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheServiceGrammar
import Foundation
import Logging

/// Warms a ring of `artcache serve` nodes through its front door: each
/// image is asked for there as signed `pri=low` requests, so the node the
/// front routes its source to — the one that will serve it — downloads and
/// stores it, not the machine that wants it warm. Used by a manifest's
/// warm-up when `[service] front_url` is set, and by `artcache prefetch --via`.
package struct FrontWarmer: Sendable {
    /// The front door, as `OperatorEndpoint.url(_:allowingPath:)` keeps it (no trailing `/`).
    package let front: String
    let signer: ServiceURLSigner
    let downloader: Downloader
    /// Per request (`[service] timeout`).
    let timeout: TimeInterval
    let logger: Logger
    /// Where a failed warm-up is logged: `.debug` behind a manifest (the
    /// owner remembers why), `.warning` in the CLI, whose user asked for it.
    let failureLevel: Logger.Level

    package init(front: String, signer: ServiceURLSigner, downloader: Downloader, timeout: TimeInterval, logger: Logger,
                 failureLevel: Logger.Level = .debug) {
        self.front = front
        self.signer = signer
        self.downloader = downloader
        self.timeout = timeout
        self.logger = logger
        self.failureLevel = failureLevel
    }

    /// Asks the front for `url`'s thumbnails at `sizes` (with `fit`), once
    /// per `Accept` class (``ServiceSettings/warmUpAccepts``: the owner keeps
    /// the format each class is answered with), or for the original when
    /// `sizes` is empty. One request at a time; the first that fails ends the
    /// warm-up (the owner remembers why: its retry queue, its negative
    /// answers). Returns whether every answer was 200.
    package func warm(_ url: String, sizes: [ImageSize], fit: VariantSpec.Fit?) async -> Bool {
        if case .warmed = await warmUp(url, sizes: sizes, fit: fit) { true } else { false }
    }

    /// How one warm-up ended (``warmUp(_:sizes:fit:)``).
    package enum Outcome: Sendable {
        case warmed
        /// The front answered, not 200: its status and `X-ArtCache-Error`.
        case refused(status: Int, error: String)
        /// A request got no answer (the front down, a timeout...).
        case failed(DownloadError)
    }

    /// ``warm(_:sizes:fit:)``, saying how it ended.
    package func warmUp(_ url: String, sizes: [ImageSize], fit: VariantSpec.Fit?) async -> Outcome {
        let requests: [(path: String, accept: String?)] = sizes.isEmpty
            ? [(signer.path(for: url, options: ThumbnailOptions(priority: .low)), nil)]
            : sizes.flatMap { size in
                let path = signer.path(for: url, options: ThumbnailOptions(size: size, fit: fit, priority: .low))
                return ServiceSettings.warmUpAccepts.map { (path, Optional($0)) }
            }
        let priority = PriorityHandle(.low, background: true)
        for request in requests {
            if Task.isCancelled { return .failed(DownloadError(.cancelled, "\(url): cancelled")) }
            do {
                let answer = try await downloader.getEndpoint(front + request.path, accept: request.accept, timeout: timeout,
                                                              priority: priority)
                guard answer.status == 200 else {
                    logger.log(level: failureLevel, "warm-up through the front refused", metadata: [
                        "url": "\(url)", "status": "\(answer.status)", "error": "\(answer.headers["x-artcache-error"] ?? "")"])
                    return .refused(status: answer.status, error: answer.headers["x-artcache-error"] ?? "")
                }
            } catch {
                logger.log(level: failureLevel, "warm-up through the front failed", metadata: ["url": "\(url)", "error": "\(error)"])
                return .failed(error)
            }
        }
        return .warmed
    }
}
