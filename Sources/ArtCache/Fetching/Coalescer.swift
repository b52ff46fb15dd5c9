import Foundation
import Synchronization

/// Runs one operation per key at a time: concurrent callers for the same key
/// share it. A caller that is cancelled leaves at once without disturbing the
/// others; when the last caller leaves, the operation itself is cancelled.
final class Coalescer<Value: Sendable>: Sendable {
    private struct Flight {
        let id: UUID
        let task: Task<Void, Never>
        var waiters: [UUID: CheckedContinuation<Value, Error>]
    }

    private let flights = Mutex<[String: Flight]>([:])

    /// Number of operations under way (for tests).
    var inFlight: Int { flights.withLock { $0.count } }

    func run(key: String, operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let waiter = UUID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, Error>) in
                let cancelled = flights.withLock { flights -> Bool in
                    // Checked under the lock that onCancel takes too, so a
                    // cancellation is seen either here or there.
                    if Task.isCancelled { return true }
                    if flights[key] != nil {
                        flights[key]!.waiters[waiter] = continuation
                        return false
                    }
                    let flightID = UUID()
                    let task = Task {
                        let result: Result<Value, Error>
                        do { result = .success(try await operation()) } catch { result = .failure(error) }
                        self.finish(key: key, flightID: flightID, result: result)
                    }
                    flights[key] = Flight(id: flightID, task: task, waiters: [waiter: continuation])
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let (continuation, orphaned) = flights.withLock { flights -> (CheckedContinuation<Value, Error>?, Task<Void, Never>?) in
                guard var flight = flights[key], let continuation = flight.waiters.removeValue(forKey: waiter) else {
                    return (nil, nil)
                }
                if flight.waiters.isEmpty {
                    flights[key] = nil
                    return (continuation, flight.task)
                }
                flights[key] = flight
                return (continuation, nil)
            }
            continuation?.resume(throwing: CancellationError())
            orphaned?.cancel()
        }
    }

    private func finish(key: String, flightID: UUID, result: Result<Value, Error>) {
        let waiters = flights.withLock { flights -> [CheckedContinuation<Value, Error>] in
            guard let flight = flights[key], flight.id == flightID else { return [] }
            flights[key] = nil
            return Array(flight.waiters.values)
        }
        for waiter in waiters { waiter.resume(with: result) }
    }
}
