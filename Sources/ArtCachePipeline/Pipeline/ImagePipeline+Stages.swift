import ArtCacheCore
import ArtCacheFetch
import ArtCacheStore
import Foundation

/// Where a request's time goes: the pipeline times the stages it runs
/// (download, sniff and hash, render; the store times its commits) into one
/// ``StageTimings`` per pipeline. The service exports them on `/metrics`,
/// `prefetch --json` reports their percentiles. One clock read at each end
/// of a stage and one lock per record: nothing allocated, no lock held
/// across an await.
extension ImagePipeline {
    /// The stage durations of this pipeline's requests since it opened.
    package var stages: StageTimings { store.stages }

    /// The downloads under way now, with their bytes so far (what a stalled
    /// `prefetch` says it waits on).
    package var downloadsUnderWay: [TransferProgress] { downloader.underWay }

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
            if Self.reachedNetwork(error) { stages.record(.download, since: started) }
            throw error
        }
    }

    private static func reachedNetwork(_ error: DownloadError) -> Bool {
        switch error.code {
        case .cancelled, .hostOffline, .queueFull, .refusedScheme, .blockedAddress, .blockedSource, .invalidURL: false
        default: true
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
