import CFuzzerDriver
import Foundation

nonisolated(unsafe) private var testOneInput: (@Sendable (Data) -> Void)?

/// Runs libFuzzer (its usual command line: corpus folders, -runs=N,
/// -max_total_time=N, a crash file to replay …) with `body` as the function
/// under test. Never returns.
public func runFuzzer(_ body: @escaping @Sendable (Data) -> Void) -> Never {
    testOneInput = body
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    let status = LLVMFuzzerRunDriver(&argc, &argv) { bytes, count in fuzzerTestOneInput(bytes, count) }
    exit(status)
}

/// The libFuzzer callback. Also exported under its conventional name: the
/// runtime's own (unused) main refers to it, and the link needs it defined.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    // A copy of exactly `count` bytes: an over-read is an ASan report.
    let data = if let bytes, count > 0 { Data(bytes: bytes, count: count) } else { Data() }
    testOneInput?(data)
    return 0
}

/// An invariant of the code under test: when it does not hold, the input is
/// reported as a crash (libFuzzer saves it as a crash-… file).
public func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                    file: StaticString = #fileID, line: UInt = #line) {
    guard condition() else {
        fatalError("invariant failed: \(message())", file: file, line: line)
    }
}

/// Text the way the parsers receive it (invalid UTF-8 repaired as U+FFFD).
public func text(_ data: Data) -> String {
    String(decoding: data, as: UTF8.self)
}

/// `data` as a slice whose startIndex is not 0: index arithmetic that
/// assumes a zero-based Data fails on it.
public func offsetSlice(_ data: Data) -> Data {
    (Data([0xA5]) + data).dropFirst()
}

/// Short, printable rendering of a string for failure messages.
public func shown(_ value: String) -> String {
    let limited = value.count > 200 ? String(value.prefix(200)) + "…" : value
    return limited.debugDescription
}
