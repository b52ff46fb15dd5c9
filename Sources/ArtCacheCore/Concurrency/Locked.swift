import Foundation

/// A value behind a pthread mutex (`NSLock`). Used instead of
/// `Synchronization.Mutex` because ThreadSanitizer on Linux does not see
/// futex-based locking and reports false races; it sees pthread mutexes.
///
/// `@unchecked Sendable` is sound: `value` is read and written only inside
/// `withLock`, which holds `lock` for the whole access, and `Value` is
/// `Sendable`, so nothing non-Sendable escapes.
///
/// `@inlinable`: specialized where it is used (the memory hit path takes
/// several locks per request; unspecialized, each went through generic
/// metadata lookups and value witnesses).
package final class Locked<Value: Sendable>: @unchecked Sendable {
    @usableFromInline let lock = NSLock()
    @usableFromInline var value: Value

    @inlinable package init(_ value: Value) { self.value = value }

    @inlinable @discardableResult
    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
