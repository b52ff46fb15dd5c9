import ArtCacheCore
import ArtCacheFetch
import ArtCacheStore
import Foundation

/// Where a request's time goes: the parts of the pipeline time the stages
/// they run (download, sniff and hash, render; the store times its
/// commits) into one ``StageTimings`` per pipeline (``PipelinePart``). The
/// service exports them on `/metrics`, `prefetch --json` reports their
/// percentiles. One clock read at each end of a stage and one lock per
/// record: nothing allocated, no lock held across an await.
extension ImagePipeline {
    /// The stage durations of this pipeline's requests since it opened.
    package var stages: StageTimings { store.stages }

    /// The downloads under way now, with their bytes so far (what a stalled
    /// `prefetch` says it waits on).
    package var downloadsUnderWay: [TransferProgress] { downloader.underWay }
}
