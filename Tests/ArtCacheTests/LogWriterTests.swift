@testable import ArtCachePipeline
@testable import ArtCacheServer
import Foundation
import Logging
import Testing

/// `serve`'s log writer: events leave the request path at once (a bounded
/// queue), are formatted and written on its own thread in StreamLogHandler's
/// format, and what does not fit is dropped and counted, never waited for.
@Suite("Log writer", .timeLimit(.minutes(3)))
struct LogWriterTests {
    /// Reads what a pipe holds until `count` lines (on a thread: reads block).
    static func readLines(_ fd: Int32, count: Int) async -> [String] {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var data = Data()
                var buffer = [UInt8](repeating: 0, count: 65536)
                while data.filter({ $0 == 0x0A }).count < count {
                    let n = read(fd, &buffer, buffer.count)
                    guard n > 0 else { break }
                    data.append(contentsOf: buffer[0..<n])
                }
                continuation.resume(returning: String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init))
            }
        }
    }

    /// `stop()` waits for the writer: on a thread of its own, not the cooperative pool.
    static func offPool(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                body()
                continuation.resume()
            }
        }
    }

    @Test func linesAreWrittenInOrderInTheStreamFormat() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let writer = LogWriter(fd: fds[1], capacity: 100)
        var logger = Logger(label: "artcache.test") { BufferedLogHandler(label: $0, writer: writer) }
        logger[metadataKey: "node"] = "a"
        for index in 0..<50 {
            logger.info("request", metadata: ["status": "200", "n": "\(index)"])
        }
        let lines = await Self.readLines(fds[0], count: 50)
        await Self.offPool { writer.stop() }
        close(fds[1])
        #expect(lines.count == 50)
        #expect(lines.first?.contains(" info artcache.test: n=0 node=a status=200 [ArtCacheTests] request") == true, "\(lines.first ?? "")")
        #expect(lines.enumerated().allSatisfy { $0.element.contains("n=\($0.offset) ") })
        // The timestamp StreamLogHandler writes: 2026-11-23T22:06:31+0000.
        #expect(lines.first?.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} "#, options: .regularExpression) != nil)
        #expect(writer.dropped == 0)
    }

    /// A reader that stops reading (a full pipe) never blocks the logger:
    /// past `capacity` waiting events, new ones are dropped and counted.
    /// Metadata prints in key order whatever the previous line's keys were
    /// (the writer reuses the order found for the same key set).
    @Test func metadataIsInKeyOrderAcrossChangingKeySets() {
        let sets: [Logger.Metadata] = [
            ["b": "2", "a": "1"], ["c": "3", "a": "1", "b": .stringConvertible(2)], ["b": "2", "a": "1"],
            ["status": .stringConvertible(200), "method": "GET", "path": "/x", "bytes": .stringConvertible(5)],
            ["status": .stringConvertible(304), "method": "GET", "path": "/y", "bytes": .stringConvertible(0)],
        ]
        var keys = LogWriter.SortedKeys()
        var text: [UInt8] = []
        for metadata in sets {
            LogWriter.append(LogWriter.Record(date: Date(), level: .info, label: "l", message: "m", metadata: metadata, source: "S"),
                             timestamp: "T", keys: &keys, to: &text)
        }
        #expect(String(decoding: text, as: UTF8.self).split(separator: "\n") == [
            "T info l: a=1 b=2 [S] m", "T info l: a=1 b=2 c=3 [S] m", "T info l: a=1 b=2 [S] m",
            "T info l: bytes=5 method=GET path=/x status=200 [S] m", "T info l: bytes=0 method=GET path=/y status=304 [S] m",
        ])
    }

    /// An access line queued as it is prints what its metadata prints:
    /// the same keys, in order, the same values (a long path cut alike).
    @Test(arguments: [
        AccessLine(method: "GET", path: "/s/100x100/aHR0cA", status: 200, tier: "memory", bytes: 2401, seconds: 0.0004, error: nil),
        AccessLine(method: "GET", path: "/" + String(repeating: "p", count: 300), status: 404, tier: "network", bytes: 0,
                   seconds: 1.25, error: "http_404"),
    ])
    func anAccessLinePrintsAsItsMetadata(_ line: AccessLine) {
        var keys = LogWriter.SortedKeys()
        var direct: [UInt8] = [], structured: [UInt8] = []
        LogWriter.append(LogWriter.Record(date: Date(), level: .info, label: "l", message: "request", metadata: [:], source: "S",
                                          access: line), timestamp: "T", keys: &keys, to: &direct)
        LogWriter.append(LogWriter.Record(date: Date(), level: .info, label: "l", message: "request", metadata: line.metadata,
                                          source: "S"), timestamp: "T", keys: &keys, to: &structured)
        #expect(String(decoding: direct, as: UTF8.self) == String(decoding: structured, as: UTF8.self))
        #expect(String(decoding: direct, as: UTF8.self).hasPrefix("T info l: bytes=\(line.bytes) error=\(line.error ?? "") method=GET ms="))
    }

    /// Through `serve`'s handler the line is queued as it is; through any
    /// other handler (or one with metadata of its own) it is metadata.
    @Test func theAccessLogQueuesItsLineOnlyThroughServesOwnWriter() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let writer = LogWriter(fd: fds[1], capacity: 10)
        let line = AccessLine(method: "GET", path: "/a/b/c", status: 200, tier: "memory", bytes: 5, seconds: 0.001, error: nil)
        let logger = Logger(label: "artcache.test") { BufferedLogHandler(label: $0, writer: writer) }
        logger.access(line, source: "S")
        var tagged = logger
        tagged[metadataKey: "request_id"] = "r1"
        tagged.access(line, source: "S")
        var quiet = logger
        quiet.logLevel = .warning
        quiet.access(line, source: "S")
        writer.stop()
        close(fds[1])
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = read(fds[0], &chunk, chunk.count)
        let lines = String(decoding: chunk[..<max(0, count)], as: UTF8.self).split(separator: "\n").map { String($0.split(separator: " ", maxSplits: 1)[1]) }
        #expect(lines == [
            "info artcache.test: bytes=5 error= method=GET ms=1 path=/a/b/c status=200 tier=memory [S] request",
            "info artcache.test: bytes=5 error= method=GET ms=1 path=/a/b/c request_id=r1 status=200 tier=memory [S] request",
        ])
    }

    @Test(arguments: [0, 7, 10, 200, -42, Int.max, Int.min])
    func numbersPrintAsTheirDescription(_ number: Int) {
        var bytes: [UInt8] = []
        LogWriter.appendDecimal(number, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == number.description)
    }

    @Test func aStalledOutputDropsAndCountsInsteadOfBlocking() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        _ = fcntl(fds[1], 1031 /* F_SETPIPE_SZ */, 4096)  // a page: about 15 lines, then writes block
        let writer = LogWriter(fd: fds[1], capacity: 10)
        let logger = Logger(label: "artcache.test") { BufferedLogHandler(label: $0, writer: writer) }
        let padding = String(repeating: "x", count: 200)
        for index in 0..<2000 { logger.info("line \(index) \(padding)") }
        // At most: the queue, one batch being written, what fits in the pipe.
        #expect(writer.dropped >= 2000 - 10 - 10 - 4096 / 200, "dropped \(writer.dropped)")
        let accepted = 2000 - writer.dropped
        // Unblock the writer: read everything it wrote, then stop it.
        let readEnd = fds[0]
        let reading = Task { await Self.readLines(readEnd, count: accepted) }
        await Self.offPool { writer.stop() }
        close(fds[1])
        let lines = await reading.value
        #expect(lines.count == accepted)
        #expect(writer.dropped == 2000 - accepted, "nothing more dropped after the stall")
        logger.info("after stop")
        #expect(writer.dropped == 2001 - accepted, "a stopped writer drops")
    }

    /// /metrics counts the writer's drops as a counter.
    @Test func metricsCountTheDrops() {
        let metrics = ServiceMetrics()
        let activity = PipelineActivity(downloadsActive: 0, downloadsQueued: 0, rendersActive: 0, rendersQueued: 0,
                                        memoryEntries: 0, memoryBytes: 0)
        let first = String(decoding: metrics.exposition(activity: activity, admission: (0, 0), logDropped: 5), as: UTF8.self)
        #expect(first.contains("artcache_access_log_dropped_total 5"))
        let second = String(decoding: metrics.exposition(activity: activity, admission: (0, 0), logDropped: 7), as: UTF8.self)
        #expect(second.contains("artcache_access_log_dropped_total 7"))
    }
}
