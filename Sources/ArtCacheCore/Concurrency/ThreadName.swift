import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Names the calling thread as `top -H`, `perf` and /proc show it
/// (Foundation's `Thread.name` does not reach the kernel on Linux, and
/// Swift's Glibc module does not declare `pthread_setname_np`). Linux keeps
/// 15 bytes of it. Best effort: a failure leaves the inherited name.
package enum ThreadName {
    package static func set(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}
