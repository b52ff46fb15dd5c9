import Dispatch

/// Runs blocking work (file I/O, libvips, SQLite without GRDB's own queues)
/// on a Dispatch queue, never on Swift's cooperative thread pool.
enum Blocking {
    private static let queue = DispatchQueue(label: "artcache.blocking-io", qos: .utility, attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
