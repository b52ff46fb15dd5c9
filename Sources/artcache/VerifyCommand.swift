import ArgumentParser
import Foundation

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check the index against the blobs; exit 1 while problems remain.")

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }

    @Flag(help: "Fix problems: drop bad rows, delete orphan blobs and dead writers' temp files.")
    var repair = false
    @Flag(help: "Also check every blob's SHA-256 (reads every byte).") var hash = false
    @Flag(help: "Print stable JSON (documented in docs/commands.md).") var json = false

    func run() async throws {
        try await reportingErrors {
            let configuration = try global.configuration()
            let report = try await global.withPipeline(configuration, readOnly: !repair) { try await $0.verify(repair: repair, hash: hash) }
            if json {
                print(try Output.json(report))
            } else {
                print("rows \(report.rows), blobs \(report.blobs)")
                print("missing blobs \(report.missingBlobs), size mismatches \(report.sizeMismatches)" +
                      (hash ? ", hash mismatches \(report.hashMismatches)" : ""))
                print("orphan blobs \(report.orphanBlobs), temp files \(report.tempFiles)")
                if report.ignoredFiles > 0 {
                    print("ignored \(report.ignoredFiles) (not blobs by name or type, or symlinks; left alone)")
                }
                for problem in report.problems.prefix(20) {
                    print("  \(problem.kind): \(problem.path)")
                }
                if repair {
                    print("repaired \(report.repaired)")
                    print("placeholders computed \(report.placeholdersComputed)"
                          + (report.placeholdersFailed > 0 ? ", \(report.placeholdersFailed) originals do not decode" : ""))
                } else if report.placeholdersMissing > 0 {
                    print("\(report.placeholdersMissing) originals without a placeholder (computed when read, or by --repair)")
                }
                print(report.remaining == 0 ? "ok" : "\(report.remaining) problems remain (run with --repair)")
            }
            if report.remaining > 0 { throw ExitCode(1) }
        }
    }
}
