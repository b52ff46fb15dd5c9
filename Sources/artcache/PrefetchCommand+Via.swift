import ArgumentParser
import ArtCache
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
        let warmer = FrontWarmer(front: front, signer: signer, downloader: downloader, timeout: configuration.service.timeout,
                                 logger: logger, failureLevel: .warning)
        let specs = noThumbnails ? [] : configuration.thumbnails.sizes
        let workers = max(1, configuration.download.concurrency)
        let warmed = await withTaskGroup(of: Bool.self) { group in
            var next = 0
            var warmed = 0
            func add() {
                guard next < urls.count else { return }
                let url = urls[next]
                next += 1
                group.addTask {
                    if specs.isEmpty { return await warmer.warm(url, sizes: [], fit: nil) }
                    for spec in specs where !(await warmer.warm(url, sizes: [ImageSize(width: spec.width, height: spec.height)],
                                                                fit: spec.fit)) {
                        return false
                    }
                    return true
                }
            }
            for _ in 0..<workers { add() }
            for await ok in group {
                if ok { warmed += 1 }
                add()
            }
            return warmed
        }
        let report = ViaReport(via: front, requested: urls.count, warmed: warmed, failed: urls.count - warmed)
        if json {
            print(try Output.json(report))
        } else {
            print("warmed \(report.warmed) of \(report.requested) through \(front) (\(report.failed) failed)")
        }
        if report.failed > 0 { throw ExitCode(1) }
    }
}
