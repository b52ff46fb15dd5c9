import Foundation

/// Runs one operation per key at a time: concurrent callers for the same key
/// share it. A caller that is cancelled leaves at once without disturbing the
/// others; when the last caller leaves, the operation itself is cancelled.
///
/// The operation runs at the highest priority of the callers waiting for it:
/// it gets a `PriorityHandle` that follows them as they come, go and change.
package final class Coalescer<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Waiter {
        let continuation: CheckedContinuation<Value, Error>
        let priority: PriorityHandle
        let token: Int
    }

    private struct Flight {
        let id: UUID
        let task: Task<Void, Never>
        let priority: PriorityHandle
        var waiters: [UUID: Waiter]

        var highestPriority: ImagePriority { waiters.values.map(\.priority.value).max() ?? .veryLow }
    }

    private let flights = Locked<[Key: Flight]>([:])
    /// Called after a caller has joined (or started) the flight for a key (tests).
    private let onJoin: @Sendable (Key) -> Void

    package init(onJoin: @escaping @Sendable (Key) -> Void = { _ in }) {
        self.onJoin = onJoin
    }

    /// Number of operations under way (for tests).
    package var inFlight: Int { flights.withLock { $0.count } }

    package func run(key: Key, priority: PriorityHandle,
             operation: @escaping @Sendable (PriorityHandle) async throws -> Value) async throws -> Value {
        let waiter = UUID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, Error>) in
                let token = priority.observe { [weak self] _ in self?.updatePriority(key: key) }
                let cancelled = flights.withLock { flights -> Bool in
                    // Checked under the lock that onCancel takes too, so a
                    // cancellation is seen either here or there.
                    if Task.isCancelled { return true }
                    let joining = Waiter(continuation: continuation, priority: priority, token: token)
                    if flights[key] != nil {
                        flights[key]!.waiters[waiter] = joining
                        return false
                    }
                    let flightID = UUID()
                    // Work behind answers stays marked as such (the pools' reserved share).
                    let flightPriority = PriorityHandle(priority.value, background: priority.background)
                    let task = Task {
                        let result: Result<Value, Error>
                        do { result = .success(try await operation(flightPriority)) } catch { result = .failure(error) }
                        self.finish(key: key, flightID: flightID, result: result)
                    }
                    flights[key] = Flight(id: flightID, task: task, priority: flightPriority, waiters: [waiter: joining])
                    return false
                }
                if cancelled {
                    priority.removeObserver(token)
                    continuation.resume(throwing: CancellationError())
                } else {
                    updatePriority(key: key)
                    onJoin(key)
                }
            }
        } onCancel: {
            let (left, orphaned) = flights.withLock { flights -> (Waiter?, Task<Void, Never>?) in
                guard var flight = flights[key], let left = flight.waiters.removeValue(forKey: waiter) else {
                    return (nil, nil)
                }
                if flight.waiters.isEmpty {
                    flights[key] = nil
                    return (left, flight.task)
                }
                flights[key] = flight
                return (left, nil)
            }
            guard let left else { return }
            left.priority.removeObserver(left.token)
            left.continuation.resume(throwing: CancellationError())
            if let orphaned { orphaned.cancel() } else { updatePriority(key: key) }
        }
    }

    /// Sets a flight's priority to the highest of its waiters'. Done under
    /// the lock, on purpose, so concurrent updates cannot leave a stale value
    /// (an update computed outside it could land after a newer one). The
    /// handle's observers then run inside this lock and take their own:
    ///
    /// lock order: variants coalescer → originals coalescer (a variant's
    /// flight waits on its original's) → the flight's `PriorityHandle` →
    /// the downloader's inbox (`CurlEngine`) / the render queue
    /// (`WorkerThreads`). None of those ever calls back into a coalescer or
    /// a handle while holding its lock, so the order has no cycle
    /// (`CoalescerPriorityTests` raises and lowers priorities from many
    /// tasks while flights complete).
    private func updatePriority(key: Key) {
        flights.withLock { flights in
            guard let flight = flights[key] else { return }
            flight.priority.value = flight.highestPriority
        }
    }

    private func finish(key: Key, flightID: UUID, result: Result<Value, Error>) {
        let waiters = flights.withLock { flights -> [Waiter] in
            guard let flight = flights[key], flight.id == flightID else { return [] }
            flights[key] = nil
            return Array(flight.waiters.values)
        }
        for waiter in waiters {
            waiter.priority.removeObserver(waiter.token)
            waiter.continuation.resume(with: result)
        }
    }
}
