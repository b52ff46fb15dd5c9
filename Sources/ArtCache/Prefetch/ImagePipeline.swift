import Foundation
import Logging

/// How an original was obtained.
public struct FetchOutcome: Sendable {
    public enum Source: String, Sendable, Codable {
        /// Fresh in the cache: no network.
        case cached
        /// Expired, and the origin answered 304: expiry refreshed, no body.
        case revalidated
        /// Downloaded and stored.
        case downloaded
        /// Downloaded, but the origin said `no-store`: not kept.
        case uncacheable
    }

    public let source: Source
    /// The index row (nil for `.uncacheable`).
    public let entry: CacheEntry?
    public let data: Data
    /// The declared Content-Type was wrong and was corrected.
    public let repaired: Bool
    /// Bytes transferred for this item.
    public let downloadedBytes: Int
}

/// The image layer: cache first, then the network, with request coalescing.
/// Failures caused by the network go to the store's persistent retry queue.
public final class ImagePipeline: Sendable {
    public let store: CacheStore
    public let downloader: Downloader
    /// Renders variants; nil when this pipeline only handles originals.
    public let renderer: Renderer?
    let logger: Logger
    let originals = Coalescer<FetchOutcome>()
    let variants = Coalescer<VariantOutcome>()

    public init(store: CacheStore, downloader: Downloader, renderer: Renderer? = nil,
                logger: Logger = Logger(label: "artcache.pipeline")) {
        self.store = store
        self.downloader = downloader
        self.renderer = renderer
        self.logger = logger
    }

    /// The original for `url`: from the cache when fresh, revalidated when
    /// expired, downloaded otherwise. Concurrent calls for one URL share one
    /// download. Throws `DownloadError` (including `.notAnImage`) or `StoreError`.
    public func original(_ url: String) async throws -> FetchOutcome {
        let normalized: NormalizedURL
        do {
            normalized = try NormalizedURL(url)
        } catch {
            throw DownloadError(.invalidURL, error.message)
        }
        return try await originals.run(key: normalized.key.hex) { [self] in
            do {
                return try await load(normalized)
            } catch let error as DownloadError {
                if error.isNetworkFailure {
                    try? await store.enqueueRetry(url: normalized.string, reason: error.reason, message: error.message)
                } else if error.code != .cancelled {
                    try? await store.dequeueRetry(url: normalized.string)  // the origin answered: final
                }
                throw error
            }
        }
    }

    private func load(_ url: NormalizedURL) async throws -> FetchOutcome {
        let now = Date()
        if let hit = try await store.lookup(key: url.key) {
            if hit.entry.isFresh(at: now) {
                return FetchOutcome(source: .cached, entry: hit.entry, data: hit.data, repaired: false, downloadedBytes: 0)
            }
            let revalidation: Result<HTTPResponse, DownloadError>
            do {
                revalidation = .success(try await downloader.fetch(url.string, validators: hit.entry.validators))
            } catch {
                revalidation = .failure(error)
            }
            if case .failure(let error) = revalidation, error.isNetworkFailure {
                // Stale beats nothing while the network is down.
                logger.debug("revalidation failed, serving stale", metadata: ["url": "\(url)", "reason": "\(error.reason)"])
                return FetchOutcome(source: .cached, entry: hit.entry, data: hit.data, repaired: false, downloadedBytes: 0)
            }
            let response = try revalidation.get()
            if response.status == 304 {
                let policy = HTTPCachePolicy(headers: response.headers, now: now)
                let validators = HTTPValidators(etag: response.headers["etag"], lastModified: response.headers["last-modified"],
                                                expiresAt: policy.expiresAt)
                try await store.refresh(key: url.key, validators: validators, now: now)
                let entry = try await store.entry(forKey: url.key) ?? hit.entry
                return FetchOutcome(source: .revalidated, entry: entry, data: hit.data, repaired: false, downloadedBytes: 0)
            }
            return try await keep(response, url: url, now: now)
        }
        let response = try await downloader.fetch(url.string)
        guard response.status != 304 else {
            throw DownloadError(.httpStatus, "\(url): 304 Not Modified for an unconditional request", status: 304)
        }
        return try await keep(response, url: url, now: now)
    }

    /// Sniffs and stores a 2xx body (or only checks it, under `no-store`).
    private func keep(_ response: HTTPResponse, url: NormalizedURL, now: Date) async throws -> FetchOutcome {
        let declared = response.headers["content-type"]
        let policy = HTTPCachePolicy(headers: response.headers, now: now)
        if policy.noStore {
            let sniffed = Sniffer.sniff(response.body)
            guard sniffed.format.isImage else { throw Self.notAnImage(sniffed.format, declared: declared, url: url) }
            return FetchOutcome(source: .uncacheable, entry: nil, data: response.body,
                                repaired: Sniffer.isMismatch(declared: Sniffer.mediaType(ofContentType: declared), sniffed: sniffed),
                                downloadedBytes: response.body.count)
        }
        do {
            let stored = try await store.put(
                url: url.string, data: response.body, declaredType: declared,
                validators: HTTPValidators(etag: response.headers["etag"], lastModified: response.headers["last-modified"],
                                           expiresAt: policy.expiresAt),
                now: now)
            return FetchOutcome(source: .downloaded, entry: stored.entry, data: response.body, repaired: stored.repaired,
                                downloadedBytes: response.body.count)
        } catch let error as StoreError where error.code == .notAnImage {
            throw Self.notAnImage(error.sniffed ?? .unknown, declared: declared, url: url)
        }
    }

    static func notAnImage(_ format: SniffedFormat, declared: String?, url: NormalizedURL) -> DownloadError {
        let type = Sniffer.mediaType(ofContentType: declared) ?? "no content type"
        return DownloadError(.notAnImage, "\(url): \(format.displayName) served as \(type)", status: 200, sniffed: format)
    }
}
