import Foundation
import Logging
import Testing
@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheTier

/// Issue 49 item 4 on the real store: a purge loses nothing a record still
/// names, streams its listing and deletes in batches.
@Suite("Second tier: purges on a real object store (Ceph RGW)",
       .enabled(if: Tier2Harness.available, Tier2Harness.whySkipped),
       .timeLimit(.minutes(3)))
struct Tier2PurgeTests {
    /// A tier on a bucket of its own (made if missing, emptied first).
    static func tier(bucket: String, _ downloader: Downloader) async throws -> Tier2 {
        var settings = try Tier2Harness.required()
        settings.bucket = bucket
        try await Tier2Harness.makeBucket(settings, downloader)
        let tier = Tier2(settings: settings, downloader: downloader, logger: Logger(label: "test"))
        _ = try await tier.purge(olderThan: 0, now: Date().addingTimeInterval(3600))
        return tier
    }

    static func record(_ url: String, _ body: Data) -> Tier2Record {
        Tier2Record(url: url, sha256: CacheKey.sha256Hex(body), size: Int64(body.count), contentType: "image/jpeg",
                    declaredType: nil, repaired: false, validators: HTTPValidators(), storedAt: Date())
    }

    /// The object's date in the bucket's listing.
    static func date(_ tier: Tier2, _ key: String) async throws -> Date {
        let page = try await tier.objects.list(prefix: key, startAfter: nil, timeout: 10, priority: PriorityHandle(.normal))
        return try #require(page.objects.first { $0.key == key }?.lastModified)
    }

    /// Two URLs with the same bytes, their records written apart: a purge
    /// whose cut-off falls between them deletes the older record and keeps
    /// the original the newer one names (its second writer copied it onto
    /// itself), and the newer record still reads.
    @Test func aPurgeKeepsTheOriginalANewerRecordNames() async throws {
        let downloader = try Downloader(settings: DownloadSettings())
        defer { downloader.shutdown() }
        let tier = try await Self.tier(bucket: "artcache-purge-shared", downloader)
        let body = Data("shared bytes \(UUID())".utf8)
        let (first, second) = (Self.record("https://a.example/1.jpg", body), Self.record("https://b.example/2.jpg", body))
        let (firstKey, secondKey) = (try CacheKey(url: first.url), try CacheKey(url: second.url))
        try await tier.write(first, data: body, for: firstKey, priority: PriorityHandle(.normal))
        let older = try await Self.date(tier, Tier2.recordKey(firstKey))
        // The second record must be dated after the first: written again until it is (the store's dates are milliseconds).
        var newer = older
        for _ in 0..<200 where newer <= older {
            try await tier.write(second, data: body, for: secondKey, priority: PriorityHandle(.normal))
            newer = try await Self.date(tier, Tier2.recordKey(secondKey))
        }
        #expect(newer > older)
        #expect(tier.counters.deduplicated >= 1, "the second writer found the bytes there")
        let cutoff = older.addingTimeInterval(newer.timeIntervalSince(older) / 2)
        let deleted = try await tier.purge(olderThan: 0, now: cutoff)
        #expect(deleted.records == 1 && deleted.originals == 0, "\(deleted)")
        let read = try await tier.read(secondKey, priority: PriorityHandle(.normal))
        #expect(read?.data == body, "the newer record still reads its original")
        #expect(try await tier.read(firstKey, priority: PriorityHandle(.normal)) == nil)
    }

    /// More objects than a listing page: the purge walks page by page and
    /// deletes each page's victims in one DeleteObjects request.
    @Test func aPurgeOfMoreThanAPageDeletesInBatches() async throws {
        let downloader = try Downloader(settings: DownloadSettings())
        defer { downloader.shutdown() }
        let tier = try await Self.tier(bucket: "artcache-purge-pages", downloader)
        let count = 1_010
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<8 {
                group.addTask {
                    for index in stride(from: lane, to: count, by: 8) {
                        try await tier.objects.put(String(format: "keys/%08d", index), body: Data("{}".utf8), contentType: "application/json",
                                                   timeout: 10, priority: PriorityHandle(.normal))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await tier.usage().records == count)
        let dry = try await tier.purge(olderThan: 0, dryRun: true, now: Date().addingTimeInterval(60))
        let afterDry = try await tier.usage().records
        #expect(dry.records == count && afterDry == count, "a dry run deletes nothing")
        let deleted = try await tier.purge(olderThan: 0, now: Date().addingTimeInterval(60))
        #expect(deleted.records == count)
        #expect(try await tier.usage() == Tier2.Usage())
    }
}

@Suite("Second tier: its breaker", .timeLimit(.minutes(1)))
struct Tier2BreakerTests {
    /// Issue 49 item 4: the tier's breaker is the hosts' breaker. Open,
    /// after its cool-down it admits exactly one probe; every other reader
    /// stays on the origin path until the probe answers (then it closes) or
    /// fails (then it opens again).
    @Test func theTiersHalfOpenBreakerAdmitsOneProbe() async throws {
        let downloader = try Downloader(settings: DownloadSettings())
        defer { downloader.shutdown() }
        var settings = Tier2FailureTests.settings(port: 9)
        settings.coolDown = 30
        let tier = Tier2(settings: settings, downloader: downloader, logger: .init(label: "test"))
        let key = try CacheKey(url: "https://example.test/a.jpg")
        let now = Date()
        for _ in 0..<settings.offlineAfter { tier.failed(DownloadError(.connect, "refused"), key) }
        #expect(!tier.admits(now: now.addingTimeInterval(1)), "open")
        let later = now.addingTimeInterval(31)
        #expect(tier.admits(now: later), "the one probe")
        #expect(!tier.admits(now: later) && !tier.admits(now: later.addingTimeInterval(1)), "the others wait for it")
        tier.failed(DownloadError(.connect, "refused"), key)  // the probe failed (now): open again for the cool-down
        #expect(!tier.admits(now: Date().addingTimeInterval(1)), "the probe failed: open again")
        let probe = Date().addingTimeInterval(31)
        #expect(tier.admits(now: probe))
        tier.succeeded()
        #expect(tier.admits(now: probe) && tier.admits(now: probe), "the probe answered: closed")
    }

    /// Issue 58: a read cancelled while it is the breaker's probe (its
    /// requester left) shows nothing about the tier: the next reader is the
    /// probe at once, the tier is not refused for another cool-down. The
    /// tier takes the connection and never answers; the breaker opened a
    /// cool-down ago (its failures dated back; 300 s, longer than the test
    /// may run).
    @Test func aCancelledProbeLeavesTheNextReaderToProbe() async throws {
        let hole = try SilentListener()
        defer { hole.close() }
        let downloader = try Downloader(settings: DownloadSettings())
        defer { downloader.shutdown() }
        var settings = Tier2FailureTests.settings(port: hole.port)
        settings.coolDown = 300
        settings.timeout = 50  // not reached: the probe is cancelled first
        let tier = Tier2(settings: settings, downloader: downloader, logger: .init(label: "test"))
        let key = try CacheKey(url: "https://example.test/a.jpg")
        let opened = Date().addingTimeInterval(-301)
        for _ in 0..<settings.offlineAfter { tier.failed(DownloadError(.connect, "refused"), key, now: opened) }
        let probe = Task { try await tier.read(key, priority: PriorityHandle(.normal)) }
        await downloader.waitForActivity { $0.active >= 1 }  // the probe is under way
        probe.cancel()
        await #expect(throws: CancellationError.self) { _ = try await probe.value }
        #expect(tier.counters.errors == settings.offlineAfter, "the cancelled probe is no failure")
        #expect(tier.admits(), "the next reader is the probe, at once")
    }
}
