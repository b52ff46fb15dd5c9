import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation
import Logging

/// What every part of the pipeline works with and none of them owns: the
/// configuration, the store, the downloader, the renderer, the memory tier,
/// the background scheduler and the logger. ``ImagePipeline`` builds them
/// once and hands each part this context; each part owns only its own
/// state (its flights, memos and counters).
struct PipelineContext: Sendable {
    let configuration: Configuration
    let store: CacheStore
    let downloader: Downloader
    let renderer: Renderer
    let memory: MemoryCache
    let background: BackgroundScheduler
    let logger: Logger
}

/// A part of the pipeline (ImagePipeline's facade is over them): the
/// shared services of its ``PipelineContext`` by name, and the timed
/// stages every part records into.
protocol PipelinePart: Sendable {
    var context: PipelineContext { get }
}

extension PipelinePart {
    var configuration: Configuration { context.configuration }
    var store: CacheStore { context.store }
    var downloader: Downloader { context.downloader }
    var renderer: Renderer { context.renderer }
    var memory: MemoryCache { context.memory }
    var background: BackgroundScheduler { context.background }
    var logger: Logger { context.logger }
    /// The stage durations of this pipeline's requests since it opened.
    var stages: StageTimings { store.stages }

    /// ``Downloader/fetch(_:validators:priority:)``, timed as `download`
    /// when it reached the network: a refusal before any transfer (an open
    /// breaker, a full host queue, a blocked address) and a cancellation are
    /// not timed.
    func download(_ url: String, validators: HTTPValidators?, priority: PriorityHandle) async throws(DownloadError) -> HTTPResponse {
        let started = ContinuousClock.now
        do {
            let response = try await downloader.fetch(url, validators: validators, priority: priority)
            stages.record(.download, since: started)
            return response
        } catch {
            if PipelineTiming.reachedNetwork(error) { stages.record(.download, since: started) }
            throw error
        }
    }

    /// `body`, timed as `stage` unless it was cancelled.
    func timed<T>(_ stage: Stage, _ body: () async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        do {
            let value = try await body()
            stages.record(stage, since: started)
            return value
        } catch {
            if !(error is CancellationError), (error as? ArtCacheError)?.code != .cancelled {
                stages.record(stage, since: started)
            }
            throw error
        }
    }
}

enum PipelineTiming {
    static func reachedNetwork(_ error: DownloadError) -> Bool {
        switch error.code {
        case .cancelled, .hostOffline, .queueFull, .refusedScheme, .blockedAddress, .blockedSource, .invalidURL: false
        default: true
        }
    }
}
