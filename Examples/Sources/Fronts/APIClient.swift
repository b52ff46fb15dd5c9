import ArtCache
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Calls a search API and keeps the last good answer of every URL on disk,
/// so a result set seen once still renders when the API is down.
public struct APIClient: Sendable {
    public enum Origin: String, Sendable {
        /// The API answered now.
        case live
        /// The API failed; this is the copy saved when it last answered.
        case saved
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    let directory: URL
    let timeout: TimeInterval

    public init(directory: String, timeout: TimeInterval = 10) {
        self.directory = URL(fileURLWithPath: directory).appendingPathComponent("fronts-api")
        self.timeout = timeout
    }

    /// The body of `url` (2xx only), or the saved copy when the API cannot be reached or fails.
    public func get(_ url: String) async throws -> (Data, Origin) {
        let saved = try savedPath(url)
        do {
            var request = URLRequest(url: URL(string: url)!)
            request.timeoutInterval = timeout
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            request.setValue("artcache-fronts", forHTTPHeaderField: "User-Agent")
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            let (data, response) = try await session.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard (200..<300).contains(status) else { throw Failure(description: "\(url): HTTP \(status)") }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let temporary = saved.appendingPathExtension("tmp")
            try data.write(to: temporary)
            guard rename(temporary.path, saved.path) == 0 else {  // atomic: readers see the old copy or the new one
                throw Failure(description: "cannot save \(saved.path): errno \(errno)")
            }
            return (data, .live)
        } catch {
            guard let data = try? Data(contentsOf: saved) else {  // no copy: the API's own error is the one to report
                throw Failure(description: "\(url): \(error)")
            }
            return (data, .saved)
        }
    }

    private func savedPath(_ url: String) throws -> URL {
        // The URL's cache key: the same file name in every process.
        do {
            return directory.appendingPathComponent(try CacheKey(url: url).hex + ".json")
        } catch {
            throw Failure(description: "\(url): \(error)")
        }
    }
}
