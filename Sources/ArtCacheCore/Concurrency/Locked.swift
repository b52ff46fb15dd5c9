import Foundation

/// A value behind a pthread mutex (`NSLock`). Used instead of
/// `Synchronization.Mutex` because ThreadSanitizer on Linux does not see
/// futex-based locking and reports false races; it sees pthread mutexes.
///
/// `@unchecked Sendable` is sound: `value` is read and written only inside
/// `withLock`, which holds `lock` for the whole access, and `Value` is
/// `Sendable`, so nothing non-Sendable escapes.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    @discardableResult
    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
