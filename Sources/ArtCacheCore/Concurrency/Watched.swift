import Foundation

/// A value behind a lock that can be awaited: `wait(until:)` suspends until
/// a change (made with `withLock`) makes the predicate true. For what tests
/// and operators wait on (a queue reaching a length) without polling.
///
/// `@unchecked Sendable` is sound: `value` and `waiters` are read and
/// written only while `lock` is held; continuations are resumed after it is
/// released; the predicates are `@Sendable`.
package final class Watched<Value: Sendable>: @unchecked Sendable {
    private struct Waiter {
        let predicate: @Sendable (Value) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private let lock = NSLock()
    private var value: Value
    private var waiters: [Waiter] = []

    package init(_ value: Value) { self.value = value }

    /// Reads or changes the value; waiters whose predicate now holds resume.
    @discardableResult
    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        let result: R
        do {
            result = try body(&value)
        } catch {
            lock.unlock()
            throw error
        }
        var ready: [CheckedContinuation<Void, Never>] = []
        if !waiters.isEmpty {
            let current = value
            waiters.removeAll { waiter in
                guard waiter.predicate(current) else { return false }
                ready.append(waiter.continuation)
                return true
            }
        }
        lock.unlock()
        for continuation in ready { continuation.resume() }
        return result
    }

    /// Returns once `predicate` holds (at once when it already does).
    package func wait(until predicate: @escaping @Sendable (Value) -> Bool) async {
        await withCheckedContinuation { continuation in
            let now = withLock { value -> Bool in
                if predicate(value) { return true }
                waiters.append(Waiter(predicate: predicate, continuation: continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}
