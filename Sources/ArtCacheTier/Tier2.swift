import ArtCacheCore
import ArtCacheFetch
import Foundation
import Logging

/// What travels with an original in the tier (`keys/<cache key>`, JSON):
/// enough for a node that reads it to answer as the node that wrote it —
/// its type, freshness and validators, and its placeholder when known.
package struct Tier2Record: Codable, Sendable, Equatable {
    package var version = 1
    package var url: String
    /// Hex SHA-256 of the bytes: the name of the blob (`originals/<sha256>`).
    package var sha256: String
    package var size: Int64
    package var contentType: String
    package var declaredType: String?
    package var repaired: Bool
    package var validators: HTTPValidators
    package var storedAt: Date
    package var width: Int?
    package var height: Int?
    package var color: String?
    /// Base64.
    package var thumbHash: String?

    package init(url: String, sha256: String, size: Int64, contentType: String, declaredType: String?, repaired: Bool,
                 validators: HTTPValidators, storedAt: Date) {
        self.url = url
        self.sha256 = sha256
        self.size = size
        self.contentType = contentType
        self.declaredType = declaredType
        self.repaired = repaired
        self.validators = validators
        self.storedAt = storedAt
    }
}

/// The shared second tier (`[tier2]`): originals in an S3-compatible bucket,
/// content-addressed (`originals/<sha256>`: the same bytes under several
/// URLs are stored once) with a small record per URL (`keys/<cache key>`).
///
/// A cache, never required: every read has a short deadline and a miss
/// goes on to the origin whatever the tier did; failures in a row open a
/// breaker (the tier is not asked for `cool_down`), and errors are counted.
package final class Tier2: Sendable {
    package struct Counters: Sendable, Equatable {
        package var hits = 0
        package var misses = 0
        package var errors = 0
        /// Reads not tried: the breaker was open.
        package var skipped = 0
        package var writes = 0
        /// Writes whose bytes the tier held already (another URL, another node).
        package var deduplicated = 0
        package var writeErrors = 0
        /// Thumbnails (`[tier2] variants`): read instead of rendered, not found, written.
        package var variantHits = 0
        package var variantMisses = 0
        package var variantWrites = 0
    }

    package let settings: Tier2Settings
    package let objects: ObjectStore
    private let logger: Logger
    /// Failures in a row open it for `cool_down`; then one probe (``HostBreaker``).
    private let breaker: HostBreaker
    let tally = Locked(Counters())
    /// Largest original read back (the download limit).
    private let maxBody: Int64

    package init(settings: Tier2Settings, downloader: Downloader, logger: Logger) {
        self.settings = settings
        objects = ObjectStore(settings: settings, downloader: downloader)
        breaker = HostBreaker(threshold: settings.offlineAfter, coolDown: settings.coolDown, maxHosts: 1)
        self.logger = logger
        maxBody = downloader.settings.maxBodyBytes
    }

    package var counters: Counters { tally.withLock { $0 } }

    package static func recordKey(_ key: CacheKey) -> String { "keys/" + key.hex }
    package static func blobKey(_ sha256: String) -> String { "originals/" + sha256 }

    /// The original stored for `key`, or nil: not in the tier, the tier
    /// failing or slow (past `timeout`), or its breaker open. Never throws
    /// but for cancellation: a miss goes on to the origin.
    package func read(_ key: CacheKey, priority: PriorityHandle) async throws -> (record: Tier2Record, data: Data)? {
        guard let pass = admission() else {
            tally.withLock { $0.skipped += 1 }
            return nil
        }
        let deadline = Date().addingTimeInterval(settings.timeout)
        do {
            let answer = try await objects.get(Self.recordKey(key), timeout: settings.timeout, maxBody: 64 << 10, priority: priority)
            guard answer.status == 200 else { return answered(answer.status, key, miss: \.misses) }
            let record = try JSONDecoder.tier2.decode(Tier2Record.self, from: answer.body)
            let left = deadline.timeIntervalSinceNow
            guard record.version == 1, left > 0.001 else { return answered(0, key, miss: \.misses) }
            let blob = try await objects.get(Self.blobKey(record.sha256), timeout: left, maxBody: maxBody, priority: priority)
            guard blob.status == 200 else { return answered(blob.status, key, miss: \.misses) }
            succeeded()
            tally.withLock { $0.hits += 1 }
            return (record, blob.body)
        } catch let error as DownloadError where error.code == .cancelled {
            cancelled(pass)
            throw CancellationError()
        } catch {
            failed(error, key)
            return nil
        }
    }

    /// Writes a record and its original (behind an answer: the caller runs
    /// it as a background job), the record first: the original is written
    /// (or, bytes the tier holds already, copied onto itself instead of sent
    /// again) after it, so the original's date is never older than the
    /// newest record that names it (what
    /// ``purge(olderThan:dryRun:now:priority:)`` relies on: written the
    /// other way round, a purge whose cut-off fell between the two writes
    /// deleted an original a kept record names). Until the original is
    /// there the record reads as a miss.
    package func write(_ record: Tier2Record, data: Data, for key: CacheKey, priority: PriorityHandle) async throws {
        let timeout = settings.writeTimeout
        do {
            let json = try JSONEncoder.tier2.encode(record)
            try await objects.put(Self.recordKey(key), body: json, contentType: "application/json", timeout: timeout,
                                  priority: priority)
            let blob = Self.blobKey(record.sha256)
            let held = try await objects.head(blob, timeout: timeout, priority: priority)
            if held == 200, try await objects.touch(blob, contentType: record.contentType, timeout: timeout,
                                                   priority: priority) != 404 {
                tally.withLock { $0.deduplicated += 1 }
            } else {
                try await objects.put(blob, body: data, contentType: record.contentType, sha256: record.sha256,
                                      timeout: timeout, priority: priority)
            }
            tally.withLock { $0.writes += 1 }
        } catch let error as DownloadError where error.code == .cancelled {
            throw CancellationError()
        } catch {
            tally.withLock { $0.writeErrors += 1 }
            logger.debug("tier2: not written", metadata: ["url": "\(record.url)", "error": "\(error)"])
            throw error
        }
    }

    /// A read that got an answer other than 200: 404 is a miss (the tier is
    /// up; counted in `miss`), anything else an error. Returns nil, the
    /// read's answer either way.
    func answered<Value>(_ status: Int, _ key: CacheKey, miss: WritableKeyPath<Counters, Int>) -> Value? {
        if status == 404 {
            succeeded()
            tally.withLock { $0[keyPath: miss] += 1 }
        } else {
            failed(DownloadError(.httpStatus, "tier2 answered \(status)", status: status), key)
        }
        return nil
    }

    /// The breaker's one key: the tier is one endpoint.
    private static let breakerKey = "tier2"

    /// Whether a read may ask the tier: its breaker is closed, or this is
    /// the one probe after its cool-down (every other reader goes to the
    /// origin until the probe has answered). Nil: not now.
    func admission(now: Date = Date()) -> HostBreaker.Pass? { breaker.admit(Self.breakerKey, now: now) }

    /// ``admission(now:)`` as a yes or no (tests).
    func admits(now: Date = Date()) -> Bool { admission(now: now) != nil }

    /// A read let through by `pass` was cancelled (its requester left): it
    /// showed nothing about the tier, so a probe's slot is given back and
    /// the next reader probes at once (issue 58: the tier stayed refused
    /// for another cool-down).
    func cancelled(_ pass: HostBreaker.Pass) { breaker.release(pass, host: Self.breakerKey) }

    func succeeded() { breaker.recordAnswer(host: Self.breakerKey) }

    func failed(_ error: any Error, _ key: CacheKey, now: Date = Date()) {
        tally.withLock { $0.errors += 1 }
        let opened = breaker.recordFailure(Self.breakerKey, cause: "\(error)", now: now)
        logger.debug("tier2: read failed, asking the origin", metadata: ["key": "\(key)", "error": "\(error)"])
        if opened {
            logger.warning("tier2: \(settings.offlineAfter) failures in a row; not asked for \(Int(settings.coolDown)) s",
                           metadata: ["endpoint": "\(settings.endpoint)"])
        }
    }
}

extension JSONEncoder {
    static var tier2: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}

extension JSONDecoder {
    static var tier2: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }
}
