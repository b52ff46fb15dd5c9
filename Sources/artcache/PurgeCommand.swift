import ArgumentParser
import ArtCacheCore
import ArtCacheStore
import Foundation

struct PurgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Remove items from the cache.",
        discussion: "Filters combine (an item must match all). Removing an original removes its variants.")

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }

    @Flag(help: "Remove everything.") var all = false
    @Option(name: .customLong("older-than"), help: "Not accessed for at least DURATION (e.g. 30d, 12h).")
    var olderThan: String?
    @Option(help: "Only items from HOST.") var host: String?
    @Option(help: "Only this URL (and its variants).") var url: String?
    @Option(name: .customLong("to-size"), help: "Remove least recently used items until the cache is at most SIZE (e.g. 500MB).")
    var toSize: String?
    @Flag(name: .customLong("variants-only"), help: "Remove variants only; keep originals.") var variantsOnly = false
    @Flag(help: "Forget remembered failures (404, 410, not an image, render failures; [download] negative_ttl): ask the origin, and render, again.")
    var failures = false
    @Flag(help: "Purge the shared second tier ([tier2]) instead, by object age: with --older-than only.")
    var tier2 = false
    @Flag(name: .customLong("dry-run"), help: "Print what would be removed; change nothing.") var dryRun = false
    @Flag(help: "Print stable JSON.") var json = false

    /// Usage, checked before any cache or tier is opened (exit 64): the
    /// durations and sizes parse, something is selected, and `--tier2`
    /// goes with `--older-than` alone.
    func validate() throws {
        if let olderThan, Units.parseDuration(olderThan) == nil {
            throw ValidationError("--older-than: invalid duration \"\(olderThan)\" (use e.g. 30d, 12h, 90m)")
        }
        if let toSize, Units.parseSize(toSize) == nil {
            throw ValidationError("--to-size: invalid size \"\(toSize)\" (use e.g. 500MB, 2GiB)")
        }
        if tier2 {
            guard olderThan != nil else { throw ValidationError("--tier2 needs --older-than AGE (the age of the objects)") }
            guard !all, host == nil, url == nil, toSize == nil, !variantsOnly, !failures else {
                throw ValidationError("--tier2 takes --older-than, --dry-run and --json only")
            }
        } else if !all, olderThan == nil, host == nil, url == nil, toSize == nil, !variantsOnly, !failures {
            throw ValidationError("nothing selected: give --all, --older-than, --host, --url, --to-size, --variants-only or --failures")
        }
    }

    func run() async throws {
        try await reportingErrors {
            // (validate() has checked that these parse and go together.)
            var request = PurgeRequest(all: all, host: host, url: url, variantsOnly: variantsOnly, dryRun: dryRun,
                                       failures: failures)
            request.olderThan = olderThan.flatMap(Units.parseDuration)
            request.toSize = toSize.flatMap(Units.parseSize)
            if tier2, let age = request.olderThan { return try await purgeTier2(olderThan: age) }
            let configuration = try global.configuration()
            let report = try await global.withPipeline(configuration, readOnly: dryRun) { try await $0.purge(request) }
            if json {
                print(try Output.json(report))
            } else {
                let verb = dryRun ? "would remove" : "removed"
                print("\(verb) \(report.removed) items (\(report.originals) originals, \(report.variants) variants), \(Units.formatSize(report.bytes))"
                      + (failures ? ", \(report.failures) remembered failures" : ""))
            }
        }
    }

    /// `--tier2`: objects of the bucket older than `--older-than`, by the
    /// date they were written (the bucket keeps no access times). The local
    /// cache is not opened.
    private func purgeTier2(olderThan: TimeInterval) async throws {
        let settings = try global.configuration()
        let report = try await global.withTier2(settings) { try await $0.purge(olderThan: olderThan, dryRun: dryRun) }
        if json {
            print(try Output.json(report))
        } else {
            print("\(dryRun ? "would remove" : "removed") \(report.records) records and \(report.originals) originals "
                  + "(\(Units.formatSize(report.bytes))) from tier2 \(settings.tier2.endpoint)/\(settings.tier2.bucket)")
        }
    }
}
