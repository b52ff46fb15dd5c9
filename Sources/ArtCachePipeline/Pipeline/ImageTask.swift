import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

/// One image load under way: its priority can be changed while it runs (a row
/// scrolling into view raises it), it can be cancelled (a reused cell), and
/// its result awaited. Cancelling the Swift task that awaits `response`
/// cancels the load too.
///
/// Loads of the same image share their work: cancelling one task leaves the
/// others; when the last one is cancelled, the download and render stop.
public final class ImageTask: Sendable, Hashable {
    public let request: ImageRequest
    private let handle: PriorityHandle
    private let work: Task<ImageResponse, Error>

    init(request: ImageRequest, pipeline: ImagePipeline) {
        self.request = request
        let handle = PriorityHandle(request.priority)
        self.handle = handle
        work = Task { try await pipeline.load(request, priority: handle) }
    }

    /// How soon the image is wanted; settable while the task waits or runs.
    public var priority: ImagePriority {
        get { handle.value }
        set { handle.value = newValue }
    }

    /// Stops the load (unless other requests share it). `response` then
    /// throws `.cancelled`.
    public func cancel() { work.cancel() }

    public var isCancelled: Bool { work.isCancelled }

    /// The image, once loaded.
    public var response: ImageResponse {
        get async throws(ArtCacheError) {
            do {
                let work = self.work
                return try await withTaskCancellationHandler {
                    try await work.value
                } onCancel: {
                    work.cancel()
                }
            } catch {
                throw ArtCacheError(any: error, context: request.url)
            }
        }
    }

    /// The outcome, without throwing.
    public var result: Result<ImageResponse, ArtCacheError> {
        get async {
            do { return .success(try await response) } catch { return .failure(error) }
        }
    }

    public static func == (a: ImageTask, b: ImageTask) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
