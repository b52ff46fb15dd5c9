import ArgumentParser
import ArtCacheCore
import ArtCacheFetch
import ArtCachePipeline
import ArtCacheRender
import ArtCacheServiceGrammar
import Foundation
import Logging

/// What `prefetch --via` did (`--json`).
struct ViaReport: Codable {
    let via: String
    let requested: Int
    let warmed: Int
    let failed: Int
}

extension PrefetchCommand {
    /// `--via`: each URL through the ring's front door (``FrontWarmer``),
    /// `[download] concurrency` URLs at once, with a downloader of its own
    /// (no local cache is opened). Exit status 1 when any warm-up failed.
    func warm(_ urls: [String], through front: String, configuration: Configuration) async throws {
        var configuration = configuration
        try configuration.applyCredentials()
        let signer = ServiceURLSigner(settings: configuration.service)
        guard signer.signs else {
            throw ValidationError("--via signs its requests: give the service's keys ([service] keys, ARTCACHE_SERVICE_KEYS "
                                  + "or the keys credential)")
        }
        var logger = Logger(label: "artcache.prefetch")
        logger.logLevel = global.verbose ? .debug : .warning
        let downloader = try Downloader(settings: configuration.download, logger: logger)
        defer { downloader.shutdown() }
        // Failures are told here, once each (a dead front once in all), not logged per request.
        let warmer = FrontWarmer(front: front, signer: signer, downloader: downloader, timeout: configuration.service.timeout,
                                 logger: logger, failureLevel: .debug)
        let specs = noThumbnails ? [] : configuration.thumbnails.sizes
        let workers = max(1, configuration.download.concurrency)
        let (warmed, unreachable) = await withTaskGroup(of: (String, FrontWarmer.Outcome).self) { group in
            var next = 0
            var warmed = 0
            // The front did not answer a connect: the rest are not asked for.
            var unreachable: DownloadError?
            func add() {
                guard next < urls.count, unreachable == nil else { return }
                let url = urls[next]
                next += 1
                group.addTask {
                    if specs.isEmpty { return (url, await warmer.warmUp(url, sizes: [], fit: nil)) }
                    for spec in specs {
                        let outcome = await warmer.warmUp(url, sizes: [ImageSize(width: spec.width, height: spec.height)],
                                                          fit: spec.fit)
                        guard case .warmed = outcome else { return (url, outcome) }
                    }
                    return (url, .warmed)
                }
            }
            for _ in 0..<workers { add() }
            for await (url, outcome) in group {
                switch outcome {
                case .warmed: warmed += 1
                case .failed(let error) where error.hostUnreachable:
                    if unreachable == nil { unreachable = error }
                    group.cancelAll()
                case .failed(let error) where error.code == .cancelled && unreachable != nil: break
                case .failed(let error): Self.tell(ArtCacheError(error).reason, error.message)
                case .refused(let status, let reason):
                    Self.tell("http_\(status)", "\(url): the front answered \(status)" + (reason.isEmpty ? "" : " (\(reason))"))
                }
                add()
            }
            return (warmed, unreachable)
        }
        let report = ViaReport(via: front, requested: urls.count, warmed: warmed, failed: urls.count - warmed)
        if json {
            print(try Output.json(report))
        } else {
            print("warmed \(report.warmed) of \(report.requested) through \(front) (\(report.failed) failed)")
        }
        if let unreachable {
            Output.error("cannot reach the front \(front): \(unreachable.cause ?? unreachable.message); "
                         + "\(report.requested - report.warmed) not warmed")
        }
        if report.failed > 0 { throw ExitCode(1) }
    }

    /// One failed warm-up on stderr, as `prefetch` lists its failures.
    private static func tell(_ reason: String, _ message: String) {
        FileHandle.standardError.write(Data("  \(reason): \(message)\n".utf8))
    }
}
