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

        mutating func add(_ object: ObjectStore.Listed) {
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

    /// Deletes records and originals older than `age` (by the object's own
    /// date: when it was written; the bucket knows no access times). A
    /// record whose original is gone reads as a miss. Returns what was deleted.
    package func purge(olderThan age: TimeInterval, dryRun: Bool = false, now: Date = Date(),
                       priority: PriorityHandle = PriorityHandle(.low)) async throws -> Usage {
        let cutoff = now.addingTimeInterval(-age)
        var deleted = Usage()
        for prefix in Self.prefixes {
            var victims: [ObjectStore.Listed] = []
            try await walk(prefix, priority: priority) { object in
                if object.lastModified < cutoff { victims.append(object) }
            }
            for object in victims {
                if !dryRun { try await objects.delete(object.key, timeout: settings.writeTimeout, priority: priority) }
                deleted.add(object)
            }
        }
        return deleted
    }

    /// Every object under `prefix`, page by page (at most ``maxListed``).
    private func walk(_ prefix: String, priority: PriorityHandle, _ visit: (ObjectStore.Listed) -> Void) async throws {
        var after: String?
        var seen = 0
        while seen < Self.maxListed {
            let page = try await objects.list(prefix: prefix, startAfter: after, timeout: settings.writeTimeout, priority: priority)
            page.objects.forEach(visit)
            seen += page.objects.count
            guard page.truncated, let last = page.objects.last?.key else { return }
            after = last
        }
    }
}
