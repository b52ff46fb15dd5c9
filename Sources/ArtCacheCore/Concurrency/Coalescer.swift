import Foundation

/// Runs one operation per key at a time: concurrent callers for the same key
/// share it. A caller that is cancelled leaves at once without disturbing the
/// others. When the last caller leaves, the operation is offered to the
/// coalescer's adopter (the pipeline's background scheduler: work whose
/// requester left at its deadline is finished and stored, within the
/// scheduler's bounds); without one, or when it declines, the operation is
/// cancelled. An adopted flight stays joinable: the next caller for the key
/// waits for it instead of starting the work again. A flight is adopted
/// once: joined and left again while its adopter still holds it (the
/// `orphaned_flight` job still queued behind running ones), it is not
/// offered again — the scheduler would answer the same job key with
/// `.duplicate`, and declining would cancel the flight the first job waits
/// for (issue 58). An adopter that lets go (``OrphanedFlight/abandon``)
/// while a caller is in the flight makes it offerable again.
///
/// The operation runs at the highest priority of the callers waiting for it:
/// it gets a `PriorityHandle` that follows them as they come, go and change.
package final class Coalescer<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Waiter {
        let continuation: CheckedContinuation<Value, Error>
        let priority: PriorityHandle
        let token: Int
        /// Whether this caller's flight, if it leaves it last, is offered
        /// for adoption (``Orphans/finish`` when it joined).
        let finishIfLeft: Bool
    }

    private struct Flight {
        let id: UUID
        let task: Task<Void, Never>
        let priority: PriorityHandle
        var waiters: [UUID: Waiter]
        /// Held by the adopter (offered and taken, not let go since): when
        /// its callers leave again it is not offered a second time.
        var adopted = false

        var highestPriority: ImagePriority { waiters.values.map(\.priority.value).max() ?? .veryLow }
    }

    private let flights = Locked<[Key: Flight]>([:])
    /// Callers that have joined (or started) a flight so far: a test waits
    /// for N callers in one flight before it lets the flight's work end.
    package let joins = Watched(0)
    private let adopt: Adopter?

    /// A flight whose last caller left, offered to an ``Adopter``.
    package struct OrphanedFlight: Sendable {
        /// This flight (a key's next flight has another): what its
        /// adopter's job is named by, so a job still held by an earlier
        /// flight of the key is not taken for this one's.
        package let id: UUID
        /// Returns when the flight has ended; cancelling the task that waits
        /// abandons it (``abandon``).
        package let finish: @Sendable () async -> Void
        /// Cancels the flight, unless a caller has joined it since.
        package let abandon: @Sendable () -> Void
    }

    /// Takes a flight whose last caller left: true when it will see it
    /// finished (and call `abandon` if it stops waiting first), false to
    /// have it cancelled now.
    package typealias Adopter = @Sendable (_ key: Key, _ flight: OrphanedFlight) -> Bool

    package init(adopt: Adopter? = nil) {
        self.adopt = adopt
    }

    /// Number of operations under way (for tests).
    package var inFlight: Int { flights.withLock { $0.count } }

    package func run(key: Key, priority: PriorityHandle,
             operation: @escaping @Sendable (PriorityHandle) async throws -> Value) async throws -> Value {
        let waiter = UUID()
        let finishIfLeft = Orphans.finish
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, Error>) in
                let token = priority.observe { [weak self] _ in self?.updatePriority(key: key) }
                let cancelled = flights.withLock { flights -> Bool in
                    // Checked under the lock that onCancel takes too, so a
                    // cancellation is seen either here or there.
                    if Task.isCancelled { return true }
                    let joining = Waiter(continuation: continuation, priority: priority, token: token, finishIfLeft: finishIfLeft)
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
                    joins.withLock { $0 += 1 }
                }
            }
        } onCancel: {
            let adopting = adopt != nil && finishIfLeft
            let (left, orphaned) = flights.withLock { flights -> (Waiter?, (id: UUID, task: Task<Void, Never>)?) in
                guard var flight = flights[key], let left = flight.waiters.removeValue(forKey: waiter) else {
                    return (nil, nil)
                }
                // Left by its last caller, held by the adopter already: it
                // finishes for the job that holds it, not offered again.
                if flight.waiters.isEmpty, flight.adopted {
                    flights[key] = flight
                    return (left, nil)
                }
                // An orphan offered for adoption stays joinable meanwhile;
                // marked adopted under the same lock, so a caller joining
                // and leaving before the offer is answered does not offer it
                // twice (a declined offer's abandon cancels it, or clears
                // the mark when someone has joined).
                if flight.waiters.isEmpty, adopting { flight.adopted = true }
                flights[key] = flight.waiters.isEmpty && !adopting ? nil : flight
                return (left, flight.waiters.isEmpty ? (flight.id, flight.task) : nil)
            }
            guard let left else { return }
            left.priority.removeObserver(left.token)
            left.continuation.resume(throwing: CancellationError())
            updatePriority(key: key)
            guard let orphaned else { return }
            guard adopting, let adopt else { return orphaned.task.cancel() }
            let abandon: @Sendable () -> Void = { [weak self] in self?.abandon(key: key, flightID: orphaned.id) }
            let flight = OrphanedFlight(id: orphaned.id, finish: {
                await withTaskCancellationHandler { await orphaned.task.value } onCancel: { abandon() }
            }, abandon: abandon)
            if !adopt(key, flight) { abandon() }
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

    /// The adopter lets go of the flight `flightID` of `key`: cancelled if
    /// no caller waits for it; else no longer adopted (when its callers
    /// leave, it is offered again).
    private func abandon(key: Key, flightID: UUID) {
        let task = flights.withLock { flights -> Task<Void, Never>? in
            guard let flight = flights[key], flight.id == flightID else { return nil }
            guard flight.waiters.isEmpty else {
                flights[key]!.adopted = false
                return nil
            }
            flights[key] = nil
            return flight.task
        }
        task?.cancel()
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

/// Whether work a caller leaves behind is finished for the next caller.
package enum Orphans {
    /// Set by a caller whose leaving is no reason to stop the work — a
    /// service request at its deadline, or whose client went away: the next
    /// request for the same image should find it done. When such a caller
    /// is the last to leave a ``Coalescer`` flight, the flight is offered to
    /// the coalescer's adopter instead of being cancelled. Unset (the
    /// default: an embedder's `ImageTask.cancel()`, a cell reused), the
    /// last caller leaving cancels the work as before.
    @TaskLocal package static var finish = false
}

