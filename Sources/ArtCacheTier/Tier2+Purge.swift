import ArtCacheCore
import ArtCacheFetch
import Foundation

extension Tier2 {
    /// What the bucket holds: records (one per URL), blobs (one per distinct
    /// original), thumbnails (`[tier2] variants`), and their bytes.
    package struct Usage: Sendable, Equatable, Codable {
        package var records = 0
        package var originals = 0
        package var variants = 0
        package var bytes: Int64 = 0

        mutating func add(_ object: BucketListing.Object) {
            if object.key.hasPrefix("keys/") { records += 1 }
            if object.key.hasPrefix("originals/") { originals += 1 }
            if object.key.hasPrefix("variants/") { variants += 1 }
            bytes += object.key.hasPrefix("keys/") ? 0 : object.size
        }
    }

    static let prefixes = ["keys/", "originals/", "variants/"]

    /// Most objects one listing walks (a bound on a loop over another
    /// system's answers: 10 million objects).
    static let maxListed = 10_000_000

    /// Counts the bucket's records and originals (listing it: the bucket
    /// keeps no totals).
    package func usage(priority: PriorityHandle = PriorityHandle(.low)) async throws -> Usage {
        var usage = Usage()
        for prefix in Self.prefixes {
            try await walk(prefix, priority: priority) { usage.add($0) }
        }
        return usage
    }

    /// Deletes what is older than `age` (by the object's own date: when it
    /// was written; the bucket knows no access times) and that no newer
    /// record names: records older than the cut-off; originals older than it
    /// (a record written or rewritten writes or copies its original onto
    /// itself after it, so an original is as new as the newest record that
    /// names it); thumbnails
    /// older than it whose original is gone. The listing is streamed, a page
    /// (1,000 objects) at a time, each page's victims deleted in one
    /// `DeleteObjects` request: nothing grows with the bucket. A record whose
    /// original is gone (a write racing the purge) reads as a miss. Returns
    /// what was deleted.
    package func purge(olderThan age: TimeInterval, dryRun: Bool = false, now: Date = Date(),
                       priority: PriorityHandle = PriorityHandle(.low)) async throws -> Usage {
        let cutoff = now.addingTimeInterval(-age)
        var deleted = Usage()
        for prefix in Self.prefixes {
            try await walkPages(prefix, priority: priority) { page in
                var victims: [BucketListing.Object] = []
                for object in page where object.lastModified < cutoff {
                    if prefix == "variants/", try await originalIsKept(of: object.key, priority: priority) { continue }
                    victims.append(object)
                }
                if !dryRun { try await objects.delete(victims.map(\.key), timeout: settings.writeTimeout, priority: priority) }
                for object in victims { deleted.add(object) }
            }
        }
        return deleted
    }

    /// Whether the original a thumbnail was rendered from is still in the
    /// bucket (its metadata names it; a thumbnail without it is not kept).
    private func originalIsKept(of variant: String, priority: PriorityHandle) async throws -> Bool {
        let answer = try await objects.headAnswer(variant, timeout: settings.writeTimeout, priority: priority)
        guard answer.status == 200, let sha = answer.headers["x-amz-meta-source-sha256"] else { return false }
        return try await objects.head(Self.blobKey(sha), timeout: settings.writeTimeout, priority: priority) == 200
    }

    /// Every object under `prefix`, page by page (at most ``maxListed``).
    private func walk(_ prefix: String, priority: PriorityHandle, _ visit: (BucketListing.Object) -> Void) async throws {
        try await walkPages(prefix, priority: priority) { page in page.forEach(visit) }
    }

    /// Every page of objects under `prefix` (at most ``maxListed`` objects).
    private func walkPages(_ prefix: String, priority: PriorityHandle,
                           _ visit: ([BucketListing.Object]) async throws -> Void) async throws {
        var next: (token: String?, after: String?) = (nil, nil)
        var seen = 0
        while seen < Self.maxListed {
            let page = try await objects.list(prefix: prefix, startAfter: next.after, continuationToken: next.token,
                                              timeout: settings.writeTimeout, priority: priority)
            try await visit(page.objects)
            seen += page.objects.count
            guard page.truncated, let last = page.objects.last?.key else { return }
            // The store's token; after the last key when it gives none.
            next = page.nextContinuationToken.map { ($0, nil) } ?? (nil, last)
        }
    }
}
