import ArgumentParser
import ArtCacheCore
import ArtCachePipeline
import ArtCacheStore
import ArtCacheTier
import Foundation

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Show what the cache holds and how it has been used.")

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }

    @Flag(help: "Print stable JSON (documented in docs/commands.md).")
    var json = false
    @Flag(help: "Count what the shared second tier ([tier2]) holds instead (lists its bucket).")
    var tier2 = false

    func run() async throws {
        try await reportingErrors {
            let configuration = try global.configuration()
            if tier2 { return try await tier2Usage(configuration) }
            let stats = try await global.withPipeline(configuration, readOnly: true) { try await $0.stats() }
            var text = json ? try Output.json(stats) : Self.text(stats)
            if !json, configuration.tier2.isEnabled {
                text += "\ntier2        \(configuration.tier2.endpoint)/\(configuration.tier2.bucket) (stats --tier2 counts it)"
            }
            print(text)
        }
    }

    /// What the tier's bucket holds: records (URLs), originals (distinct bytes) and their size.
    private func tier2Usage(_ configuration: Configuration) async throws {
        let settings = configuration.tier2
        let usage = try await global.withTier2(configuration) { try await $0.usage() }
        if json {
            struct Report: Encodable { let tier2: Tier2.Usage; let endpoint: String; let bucket: String }
            print(try Output.json(Report(tier2: usage, endpoint: settings.endpoint, bucket: settings.bucket)))
        } else {
            print("tier2        \(settings.endpoint)/\(settings.bucket)\n"
                  + "records      \(usage.records) (URLs)\noriginals    \(usage.originals) (distinct bytes), "
                  + Units.formatSize(usage.bytes))
        }
    }

    static func text(_ s: CacheStats) -> String {
        var lines: [String] = []
        let percent = s.maxBytes > 0 ? Double(s.bytes) / Double(s.maxBytes) * 100 : 0
        lines.append("cache        \(s.directory)")
        lines.append("entries      \(s.entries) (\(s.originals) originals, \(s.variants) variants; limit \(s.maxEntries))")
        lines.append("size         \(Units.formatSize(s.bytes)) of \(Units.formatSize(s.maxBytes)) (\(String(format: "%.1f", percent))%)")
        let lookups = s.hits + s.misses
        let ratio = lookups > 0 ? String(format: " (%.0f%% hit rate)", Double(s.hits) / Double(lookups) * 100) : ""
        lines.append("lookups      \(s.hits) hits, \(s.misses) misses\(ratio)")
        lines.append("evictions    \(s.evictions) (\(Units.formatSize(s.evictedBytes)))")
        let f = s.freshness
        lines.append("freshness    \(f.fresh) fresh, \(f.stale) stale (revalidated behind), \(f.expired) expired originals; "
                     + "\(f.negative) failures remembered")
        lines.append("retry queue  \(s.retryQueue)" + (s.retryDropped > 0 ? " (\(s.retryDropped) dropped when full)" : ""))
        if s.writesDropped > 0 { lines.append("not stored   \(s.writesDropped) (answered, then dropped: store-behind queue full or write failed)") }
        let now = Date()
        if let oldest = s.oldestAccess, let newest = s.newestAccess {
            lines.append("access       oldest \(Units.formatDuration(now.timeIntervalSince(oldest))) ago, newest \(Units.formatDuration(now.timeIntervalSince(newest))) ago")
        }
        if !s.repairs.isEmpty {
            lines.append("MIME repairs")
            for (pair, count) in s.repairs.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) {
                lines.append("  \(pair): \(count)")
            }
        }
        if !s.hosts.isEmpty {
            lines.append("hosts")
            for (host, h) in s.hosts.sorted(by: { $0.value.bytes != $1.value.bytes ? $0.value.bytes > $1.value.bytes : $0.key < $1.key }) {
                lines.append("  \(host): \(h.entries) entries, \(Units.formatSize(h.bytes))")
            }
        }
        return lines.joined(separator: "\n")
    }
}
