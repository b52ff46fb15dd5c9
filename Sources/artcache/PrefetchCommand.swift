import ArgumentParser
import ArtCacheCore
import ArtCacheFetch
import ArtCachePipeline
import ArtCacheRender
import ArtCacheResultSets
import ArtCacheServiceGrammar
import Foundation

extension ResultSetFormat: ExpressibleByArgument {}

struct PrefetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Get every image of one or more result sets into the cache.",
        discussion: """
            Inputs are iTunes Search/Lookup, GitHub Search Users/Repositories, Twitter v1.1 \
            responses, or plain text with one URL per line ("-" reads stdin); the format is \
            detected unless --format is given. Exit status 0 when everything is cached, 1 when \
            anything failed or was refused.
            """)

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }

    @Argument(help: "Result set files, or - for stdin.") var inputs: [String] = []
    @Option(help: "Force the input format: \(ResultSetFormat.allCases.map(\.rawValue).joined(separator: ", ")).")
    var format: ResultSetFormat?
    @Option(help: "Downloads at once (overrides [download] concurrency).") var concurrency: Int?
    @Flag(help: "Also retry every URL in the persistent retry queue.") var retry = false
    @Flag(name: .customLong("no-thumbnails"), help: "Do not render the [thumbnails] sizes.") var noThumbnails = false
    @Option(name: .customLong("contact-sheet"), help: "Write a PNG tiling the result set's thumbnails, in result order.")
    var contactSheet: String?
    @Option(help: ArgumentHelp("""
        Warm a ring of serve nodes through its front door instead of this machine's cache: each URL is asked \
        for there as signed pri=low thumbnails (the [thumbnails] sizes, once per browser Accept class; the \
        original with --no-thumbnails), so the node that will serve it stores it. Needs the service's keys.
        """, valueName: "front-url")) var via: String?
    @Flag(help: "Print the summary as stable JSON (documented in docs/commands.md).") var json = false

    func validate() throws {
        if inputs.isEmpty && !retry { throw ValidationError("give at least one result set (FILE or -), or --retry") }
        if let via {
            guard let front = OperatorEndpoint.url(via, allowingPath: true), !front.isEmpty else {
                throw ValidationError("--via must be the http or https URL of the ring's front door, without query or fragment")
            }
            if retry || contactSheet != nil {
                throw ValidationError("--via warms the ring, not this machine's cache: --retry and --contact-sheet need the local cache")
            }
        }
        try Arguments.concurrency(concurrency)
    }

    func run() async throws {
        try await reportingErrors {
            var configuration = try global.configuration()
            if let concurrency { configuration.download.concurrency = concurrency }
            // Its commits are its work, not writes behind someone's answers:
            // niced, the commit thread was preempted by every download it
            // woke and sat runnable for a third of a 5,000-image prefetch.
            configuration.cache.writerNice = 0
            // Before anything is downloaded: a sheet that cannot be written fails the run now, not after it.
            if let contactSheet { try Output.checkWritable(contactSheet, flag: "--contact-sheet") }
            var urls: [String] = []
            var seen = Set<String>()
            for input in inputs {
                for url in try Self.load(input, format: format).urls where seen.insert(url).inserted { urls.append(url) }
            }
            if let via, let front = OperatorEndpoint.url(via, allowingPath: true) {
                return try await warm(urls, through: front, configuration: configuration)
            }
            let (summary, items, stages) = try await global.withPipeline(configuration) { pipeline in
                if retry {
                    for item in try await pipeline.retryQueue() where seen.insert(item.url).inserted { urls.append(item.url) }
                }
                let reporter = ProgressReporter(quiet: json)
                let sizes = noThumbnails ? [] : configuration.thumbnails.sizes
                // The stall watch lives as long as the prefetch: cancelled when it returns.
                let result = await withTaskGroup(of: Void.self) { group in
                    group.addTask { await reporter.watch { pipeline.downloadsUnderWay } }
                    let result = await pipeline.prefetch(urls, concurrency: configuration.download.concurrency,
                                                         variants: sizes) { reporter.update($0) }
                    group.cancelAll()
                    return result
                }
                reporter.finish()
                if let contactSheet {
                    let spec = sizes.first ?? configuration.thumbnails.spec(size: "100x100")!
                    try Output.write(try await Self.contactSheet(result.items, pipeline: pipeline, spec: spec), to: contactSheet)
                    if !json { print("contact sheet \(contactSheet) (\(result.items.count) cells)") }
                }
                return (result.summary, result.items, pipeline.stages)
            }
            if json {
                print(try Output.json(PrefetchReport(summary: summary, timings: stages)))
            } else {
                print(Self.text(summary))
                for item in items {
                    if case .failure(let error) = item.outcome { FileHandle.standardError.write(Data("  \(error.reason): \(error.message)\n".utf8)) }
                }
            }
            if !summary.succeeded { throw ExitCode(1) }
        }
    }

    /// The result set's thumbnails in result order (blank cells for failures).
    /// Failed items and thumbnails that cannot be made are blank cells.
    static func contactSheet(_ items: [PrefetchItem], pipeline: ImagePipeline, spec: VariantSpec) async throws -> Data {
        var cells: [Data?] = []
        for item in items {
            guard case .success = item.outcome else {
                cells.append(nil)
                continue
            }
            let request = ImageRequest(url: item.url, width: spec.width, height: spec.height, fit: spec.fit,
                                       format: spec.format, quality: spec.quality, options: .cacheOnly)
            switch await pipeline.task(request).result {
            case .success(let image): cells.append(image.data)
            case .failure: cells.append(nil)
            }
        }
        let columns = max(1, min(8, Int(Double(cells.count).squareRoot().rounded(.up))))
        return try await pipeline.contactSheet(cells, cell: min(200, max(spec.width, spec.height)), columns: columns)
    }

    /// Reads and parses one input (a path or "-"); `manifest` reads its file so too.
    static func load(_ input: String, format: ResultSetFormat?) throws -> ResultSet {
        let data: Data
        if input == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: input) else {
                throw ValidationError("\(input): cannot read file")
            }
            data = contents
        }
        do {
            return try ResultSet.parse(data, format: format)
        } catch {
            throw ValidationError("\(input == "-" ? "stdin" : input): \(error.message)")
        }
    }

    static func text(_ s: PrefetchSummary) -> String {
        var lines = [
            "requested    \(s.requested)",
            "cached       \(s.cached) (already fresh)",
            "revalidated  \(s.revalidated)",
            "downloaded   \(s.downloaded) (\(s.repaired) with a repaired MIME type)",
            "refused      \(s.refused) (not an image)",
            "failed       \(s.failed)",
        ]
        if s.fromTier2 > 0 { lines.append("tier2        \(s.fromTier2) (from the shared second tier)") }
        if s.uncacheable > 0 { lines.append("uncacheable  \(s.uncacheable) (no-store)") }
        for (reason, count) in s.failures.sorted(by: { $0.key < $1.key }) { lines.append("  \(reason): \(count)") }
        lines.append("variants     \(s.variants) rendered, \(s.renderFailures.values.reduce(0, +)) render failures")
        for (reason, count) in s.renderFailures.sorted(by: { $0.key < $1.key }) { lines.append("  \(reason): \(count)") }
        // Each by source and size (remembered ones too: `purge --failures` forgets them).
        for failure in s.failedRenders { lines.append("  \(failure.url) \(failure.size): \(failure.reason): \(failure.message)") }
        let rate = s.seconds > 0 ? Double(s.requested) / s.seconds : 0
        lines.append("bytes        \(Units.formatSize(s.bytes)) in \(String(format: "%.2f", s.seconds)) s (\(String(format: "%.0f", rate)) URLs/s)")
        return lines.joined(separator: "\n")
    }
}
