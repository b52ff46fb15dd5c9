import ArgumentParser
import ArtCacheCore
import ArtCacheServer
import Foundation

struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Exit 0 when healthy, 1 when not: for container health checks and monitoring.",
        discussion: """
            With --url, asks a running service's GET /health (http://HOST:PORT asks /health). \
            Without it, checks the configured cache in process: the index answers a read and \
            libvips renders a 1x1 image. Prints one line: ok, or unhealthy and why.
            """)

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }

    @Option(help: ArgumentHelp("A running service to ask, e.g. http://127.0.0.1:8080 (its /health).", valueName: "url"))
    var url: String?

    @Option(help: "Seconds to wait for the answer (with --url).")
    var timeout: Double = 5

    @Flag(help: "Print {\"healthy\": BOOL, \"status\": CODE, \"message\": TEXT} instead of one line.")
    var json = false

    func validate() throws {
        guard timeout > 0, timeout <= 300 else { throw ValidationError("--timeout must be more than 0 and at most 300 seconds") }
        // A URL that is no http:// URL of a service is usage (exit 64), not "unhealthy".
        if let url {
            do throws(ArtCacheError) {
                _ = try HealthProbe.target(url)
            } catch {
                throw ValidationError("--url: \(error.message)")
            }
        }
    }

    func run() async throws {
        let (healthy, status, message) = await check()
        if json {
            struct Report: Encodable { let healthy: Bool; let status: Int?; let message: String }
            print(try Output.json(Report(healthy: healthy, status: status, message: message)))
        } else if healthy {
            print(message)
        } else {
            Output.error(message)
        }
        if !healthy { throw ExitCode(1) }
    }

    /// Healthy or not, the HTTP status when a service answered, and the line to print.
    private func check() async -> (Bool, Int?, String) {
        if let url {
            do throws(ArtCacheError) {
                let answer = try await HealthProbe.check(url, timeout: .milliseconds(Int(timeout * 1000)))
                let healthy = (200..<300).contains(answer.status)
                let summary = answer.summary.isEmpty ? "HTTP \(answer.status)" : answer.summary
                return (healthy, answer.status, healthy ? summary : "unhealthy: HTTP \(answer.status) \(summary)")
            } catch {
                return (false, nil, "unhealthy: \(error.message)")
            }
        }
        do {
            let configuration = try global.configuration()
            try await global.withPipeline(configuration) { try await $0.checkHealth() }
            return (true, nil, "ok (\(configuration.cache.directory))")
        } catch let error as ArtCacheError {
            return (false, nil, "unhealthy: \(error.reason): \(error.message)")
        } catch {
            return (false, nil, "unhealthy: \(error)")
        }
    }
}
