import Foundation

/// How soon an image is wanted. Orders admission in the downloader (in total
/// and per host) and in the render queue: a higher priority starts first,
/// equal priorities start in the order they were asked for.
public enum ImagePriority: Int, Sendable, Hashable, Comparable, CaseIterable, Codable {
    case veryLow = 0, low, normal, high, veryHigh

    public static func < (a: ImagePriority, b: ImagePriority) -> Bool { a.rawValue < b.rawValue }
}

/// A priority that can change while the work it belongs to waits: a task
/// raised by its owner, or a shared operation whose waiters come and go.
/// Observers are called outside the lock, after each change.
package final class PriorityHandle: Sendable {
    private struct State {
        var value: ImagePriority
        var observers: [Int: @Sendable (ImagePriority) -> Void] = [:]
        var nextToken = 0
    }

    private let state: Locked<State>
    /// Work behind an answer (``BackgroundScheduler``'s jobs): the download
    /// and render pools give such work a reserved share of their hand-offs,
    /// so that foreground traffic of any priority cannot starve it.
    package let background: Bool

    package init(_ value: ImagePriority, background: Bool = false) {
        state = Locked(State(value: value))
        self.background = background
    }

    package var value: ImagePriority {
        get { state.withLock { $0.value } }
        set {
            let observers = state.withLock { s -> [@Sendable (ImagePriority) -> Void] in
                guard s.value != newValue else { return [] }
                s.value = newValue
                return Array(s.observers.values)
            }
            for observer in observers { observer(newValue) }
        }
    }

    /// Calls `observer` after every change until `removeObserver(token)`.
    package func observe(_ observer: @escaping @Sendable (ImagePriority) -> Void) -> Int {
        state.withLock { s in
            s.nextToken += 1
            s.observers[s.nextToken] = observer
            return s.nextToken
        }
    }

    package func removeObserver(_ token: Int) {
        state.withLock { _ = $0.observers.removeValue(forKey: token) }
    }

    /// Runs `body` with `observer` registered, removing it afterwards.
    package func whileObserving<T>(_ observer: @escaping @Sendable (ImagePriority) -> Void,
                           _ body: () async throws -> T) async rethrows -> T {
        let token = observe(observer)
        defer { removeObserver(token) }
        return try await body()
    }
}
