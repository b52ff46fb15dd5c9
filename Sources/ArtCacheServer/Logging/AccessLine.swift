import Logging

/// One access log line's fields (one per image request). Through `serve`'s
/// own writer (``LogWriter``) it is queued as it is and formatted on the
/// writer's thread, in the line any handler would print from its metadata
/// (the keys in order); through any other log handler it is that metadata.
/// (A hit costs a few microseconds; seven metadata values hashed into a
/// dictionary and sorted back out were a fifth of one.)
struct AccessLine: Sendable {
    var method: String
    var path: String
    var status: Int
    var tier: String
    var bytes: Int
    var seconds: Double
    var error: String?

    /// The longest path logged (longer ones are cut).
    static let pathMax = 120

    var loggedPath: String { path.utf8.count <= Self.pathMax ? path : String(path.prefix(Self.pathMax)) }

    var milliseconds: Int { Int(seconds * 1000) }

    /// The fields as structured metadata. Numbers go in as values, not text:
    /// the log handler formats them.
    var metadata: Logger.Metadata {
        [
            "method": .string(method), "path": .string(loggedPath), "status": .stringConvertible(status),
            "tier": .string(tier), "bytes": .stringConvertible(bytes), "ms": .stringConvertible(milliseconds),
            "error": .string(error ?? ""),
        ]
    }

    /// ` key=value` for each field, keys sorted: what ``LogWriter`` prints
    /// for ``metadata``.
    func append(to bytes: inout [UInt8]) {
        func field(_ key: StaticString, _ value: String) {
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
            bytes.append(UInt8(ascii: "="))
            bytes.append(contentsOf: value.utf8)
        }
        func field(_ key: StaticString, _ value: Int) {
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
            bytes.append(UInt8(ascii: "="))
            LogWriter.appendDecimal(value, to: &bytes)
        }
        field("bytes", self.bytes)
        field("error", error ?? "")
        field("method", method)
        field("ms", milliseconds)
        field("path", loggedPath)
        field("status", status)
        field("tier", tier)
    }
}

extension Logger {
    /// Logs `line` at `info`: queued as it is when this logger writes
    /// through `serve`'s ``BufferedLogHandler`` with no metadata of its own,
    /// else as metadata.
    func access(_ line: AccessLine, source: String) {
        if let handler = handler as? BufferedLogHandler, handler.metadata.isEmpty, handler.metadataProvider == nil {
            guard handler.logLevel <= .info else { return }
            handler.writer.enqueue(LogWriter.Record(date: .now, level: .info, label: handler.label, message: "request",
                                                    metadata: [:], source: source, access: line))
            return
        }
        info("request", metadata: line.metadata, source: source)
    }
}
