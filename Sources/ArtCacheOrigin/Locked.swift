import Foundation

/// A value behind a pthread mutex (`NSLock`): the origin's own copy of
/// ArtCache's `Locked` (that one is not visible here). Used instead of
/// `Synchronization.Mutex` because ThreadSanitizer on Linux does not see
/// futex-based locking and reports false races; it sees pthread mutexes.
///
/// `@unchecked Sendable` is sound: `value` is read and written only inside
/// `withLock`, which holds `lock` for the whole access, and `Value` is
/// `Sendable`, so nothing non-Sendable escapes.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    @discardableResult
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
