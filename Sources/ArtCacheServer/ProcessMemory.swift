import Foundation

/// The process's resident set size, from `/proc/self/statm` (Linux), read
/// at `/metrics` scrape time: one small read of a kernel file into a stack
/// buffer, no Foundation I/O.
enum ProcessMemory {
    /// Bytes resident now; nil where `/proc` cannot be read.
    static func residentBytes() -> Int? {
        let fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer -> Int? in
            let count = read(fd, buffer.baseAddress, buffer.count)
            guard count > 0 else { return nil }
            return residentBytes(statm: UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// `statm`'s second field (resident pages) times the page size.
    static func residentBytes(statm: UnsafeBufferPointer<UInt8>) -> Int? {
        var field = 0
        var pages = 0
        var digits = 0
        for byte in statm {
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") {
                if field == 1 { break }
                field += 1
                continue
            }
            guard field == 1 else { continue }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            pages = pages * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
        }
        guard digits > 0 else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
