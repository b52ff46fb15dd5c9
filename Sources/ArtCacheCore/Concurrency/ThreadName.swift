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

/// The calling thread's CPU priority.
package enum ThreadPriority {
    /// Adds `niceness` to the calling thread's nice value (at most 19).
    /// Linux keeps the nice value per thread, and `setpriority(PRIO_PROCESS, 0, …)`
    /// names the calling thread (kernel/sys.c: `who == 0` is `current`):
    /// this thread only, never the process. Raising it needs no privilege.
    package static func lowerThisThread(by niceness: Int32) {
        guard niceness > 0 else { return }
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        errno = 0
        let current = getpriority(which, 0)
        guard errno == 0 else { return }
        _ = setpriority(which, 0, min(19, current + niceness))
    }
}
