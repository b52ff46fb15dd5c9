import ArtCacheCore
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Log lines formatted and written on a thread of their own, off the request
/// path: a request only appends its event to a bounded queue (a lock, an
/// array append); the writer thread formats the events and writes them to
/// the file descriptor in one `write` per batch. When the queue is full an
/// event is dropped and counted (`artcache_access_log_dropped_total` in
/// /metrics), so a slow terminal or pipe never slows the service.
///
/// `serve` installs it (``BufferedLogHandler``); libraries only log.
/// Lines still queued when the process is killed are lost; ``stop()``
/// (after the service has drained) writes them.
///
/// `@unchecked Sendable` is sound: `state` is read and written only with
/// `condition` locked (a pthread mutex and condition variable, which TSan
/// sees), and the thread's own buffers never leave it.
package final class LogWriter: @unchecked Sendable {
    /// One event, as logged (formatting waits for the writer thread).
    struct Record {
        var date: Date
        var level: Logger.Level
        var label: String
        var message: Logger.Message
        var metadata: Logger.Metadata
        var source: String
        /// An access line's fields, printed after `metadata` (``AccessLine``).
        var access: AccessLine? = nil
    }

    private struct State {
        var queue: [Record] = []
        var dropped = 0
        var written = 0
        var enqueued = 0
        var stopping = false
        /// The writer thread waits for a first event (only then does an
        /// enqueue signal it: no wake-up per request).
        var idle = false
    }

    /// After writing a batch the thread lets the next one gather this long
    /// (fewer wake-ups and writes at high rates; a lone line waits no longer).
    static let gathering: TimeInterval = 0.005

    private let condition = NSCondition()
    private var state = State()
    private let fd: Int32
    package let capacity: Int
    private var thread: Thread?

    /// A writer to `fd` (standard error by default) holding at most
    /// `capacity` events not yet written.
    package init(fd: Int32 = 2, capacity: Int = 8192) {
        self.fd = fd
        self.capacity = max(1, capacity)
        // The thread holds the writer until `stop()`: a writer lives as
        // long as the service that logs through it.
        let thread = Thread {
            ThreadName.set("artcache.log")
            self.drain()
        }
        thread.name = "artcache.log"
        self.thread = thread
        thread.start()
    }

    /// Queues `record`; false (and counted) when the queue is full or the writer stopped.
    @discardableResult
    func enqueue(_ record: Record) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !state.stopping, state.queue.count < capacity else {
            state.dropped += 1
            return false
        }
        state.queue.append(record)
        state.enqueued += 1
        if state.idle { condition.signal() }
        return true
    }

    /// Events dropped because the queue was full.
    package var dropped: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.dropped
    }

    /// Returns once every event queued before the call is written.
    package func flush() {
        condition.lock()
        let target = state.enqueued
        while state.written < target {
            condition.broadcast()  // a gathering writer writes now
            condition.wait()
        }
        condition.unlock()
    }

    /// Writes what is queued, then ends the thread; later events are dropped.
    package func stop() {
        condition.lock()
        state.stopping = true
        condition.broadcast()
        condition.unlock()
        flush()
    }

    private func drain() {
        var stamp = (second: Int.min, text: "")
        var keys = SortedKeys()
        var batch: [Record] = []
        var bytes: [UInt8] = []
        while true {
            condition.lock()
            while state.queue.isEmpty && !state.stopping {
                state.idle = true
                condition.wait()
                state.idle = false
            }
            if !state.stopping, state.queue.count < capacity / 2 {
                // Let the batch gather (flush and stop broadcast: they end it early).
                _ = condition.wait(until: Date(timeIntervalSinceNow: Self.gathering))
            }
            // The queue and this thread's emptied buffer change places: no
            // allocation and no copy under the lock.
            swap(&batch, &state.queue)
            let done = state.stopping && batch.isEmpty
            condition.unlock()
            if done { return }
            bytes.removeAll(keepingCapacity: true)
            bytes.reserveCapacity(batch.count * 200)
            for record in batch {
                let second = Int(record.date.timeIntervalSince1970.rounded(.down))
                if second != stamp.second { stamp = (second, Self.timestamp(record.date)) }  // once a second, not a line
                Self.append(record, timestamp: stamp.text, keys: &keys, to: &bytes)
            }
            let count = batch.count
            batch.removeAll(keepingCapacity: true)
            write(bytes)
            condition.lock()
            state.written += count
            condition.broadcast()
            condition.unlock()
        }
    }

    private func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return }  // a closed descriptor: the lines are lost, the service goes on
                offset += n
            }
        }
    }

    /// `2026-11-23T22:06:31+0000 info artcache.serve: key=value … [Module] message`,
    /// as swift-log's `StreamLogHandler` writes it.
    static func format(_ record: Record, timestamp: String? = nil) -> String {
        var line: [UInt8] = []
        var keys = SortedKeys()
        append(record, timestamp: timestamp ?? Self.timestamp(record.date), keys: &keys, to: &line)
        return String(decoding: line, as: UTF8.self)
    }

    /// Metadata in key order, as swift-log's stream handler prints it,
    /// without sorting or hashing per line: the previous line's keys, sorted,
    /// are kept, and each entry of the next line finds its place among them
    /// by comparison (short keys are compared as two words); a line with
    /// other keys sorts again. What is kept per place is the entry's index
    /// in the line's dictionary, not a copy of its value: a value is copied
    /// once, as it is printed. (Iteration order itself cannot be kept:
    /// Swift seeds each dictionary's hashing differently.)
    struct SortedKeys {
        private var keys: [String] = []
        private var positions: [Logger.Metadata.Index] = []

        mutating func append(_ metadata: Logger.Metadata, to bytes: inout [UInt8]) {
            var complete = keys.count == metadata.count
            if complete {
                // `positions` holds a place per key already (set with `keys`).
                var index = metadata.startIndex
                while index != metadata.endIndex {
                    // Keys are unique: a complete line fills every place once.
                    guard let place = keys.firstIndex(of: metadata.keys[index]) else {
                        complete = false
                        break
                    }
                    positions[place] = index
                    metadata.formIndex(after: &index)
                }
            }
            if !complete {
                keys = metadata.keys.sorted()
                positions = keys.map { metadata.index(forKey: $0)! }
            }
            for position in positions {
                let entry = metadata[position]
                LogWriter.append(entry.key, entry.value, to: &bytes)
            }
        }
    }

    /// ``format(_:timestamp:)`` appended to `bytes` (the writer builds a
    /// batch in one buffer: no string per line, no interpolation).
    static func append(_ record: Record, timestamp: String, keys: inout SortedKeys, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: timestamp.utf8)
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: record.level.rawValue.utf8)
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: record.label.utf8)
        bytes.append(UInt8(ascii: ":"))
        if record.metadata.count == 1, let (key, value) = record.metadata.first {
            append(key, value, to: &bytes)
        } else if !record.metadata.isEmpty {
            keys.append(record.metadata, to: &bytes)
        }
        record.access?.append(to: &bytes)
        bytes.append(contentsOf: " [".utf8)
        bytes.append(contentsOf: record.source.utf8)
        bytes.append(contentsOf: "] ".utf8)
        bytes.append(contentsOf: record.message.description.utf8)
        bytes.append(UInt8(ascii: "\n"))
    }

    fileprivate static func append(_ key: String, _ value: Logger.MetadataValue, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: key.utf8)
        bytes.append(UInt8(ascii: "="))
        switch value {
        case .string(let string): bytes.append(contentsOf: string.utf8)
        case .stringConvertible(let number as Int): appendDecimal(number, to: &bytes)
        case .stringConvertible(let convertible): bytes.append(contentsOf: convertible.description.utf8)
        default: bytes.append(contentsOf: value.description.utf8)
        }
    }

    /// `number` in decimal, as `Int.description` writes it, without a string.
    static func appendDecimal(_ number: Int, to bytes: inout [UInt8]) {
        if number < 0 {
            bytes.append(UInt8(ascii: "-"))
            guard number != .min else { bytes.append(contentsOf: String(number).utf8.dropFirst()); return }
        }
        var value = number.magnitude
        let start = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(value % 10))
            value /= 10
        } while value > 0
        bytes[start...].reverse()
    }

    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&seconds, &parts)
        var buffer = [Int8](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A `LogHandler` that hands events to a ``LogWriter`` (`serve` installs
/// it for its logger, access log included).
package struct BufferedLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    package var logLevel: Logger.Level = .info
    let label: String
    let writer: LogWriter

    package init(label: String, writer: LogWriter) {
        self.label = label
        self.writer = writer
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var merged: Logger.Metadata
        if metadata.isEmpty, metadataProvider == nil {
            merged = event.metadata ?? [:]  // the common case: no copy, no merge
        } else {
            merged = metadata
            if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
            if let own = event.metadata { merged.merge(own) { _, new in new } }
        }
        writer.enqueue(LogWriter.Record(date: Date(), level: event.level, label: label, message: event.message,
                                        metadata: merged, source: event.source))
    }
}
