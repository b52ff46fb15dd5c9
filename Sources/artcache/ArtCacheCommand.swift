import ArgumentParser
import ArtCachePipeline
import Foundation

@main
struct ArtCacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "artcache",
        abstract: "An image artwork cache: prefetch, inspect, purge and verify.",
        discussion: """
            Settings come from cache.conf (\(Configuration.lookupOrder); \(Configuration.trustRule)), overridden by \
            ARTCACHE_<SECTION>_<KEY> variables, overridden by flags. cache.conf documents \
            every key (an installed package's copy: /etc/artcache/cache.conf). \
            The manual is README.md and docs/ (installed in /usr/share/doc/artcache).
            """,
        version: "0.1.0",
        subcommands: [
            DemoCommand.self, PrefetchCommand.self, GetCommand.self, ThumbCommand.self, StatsCommand.self, PurgeCommand.self,
            VerifyCommand.self, ServeCommand.self, HealthCommand.self, SignCommand.self, ManifestCommand.self,
        ]
    )

    /// Global options given before the subcommand name (`artcache --cache-dir DIR stats`);
    /// each subcommand reads them through ``GlobalOptions/inheriting(_:)``.
    @OptionGroup var global: GlobalOptions

    /// ArgumentParser's `main`, but `help NAME` for a NAME that is no
    /// command is bad usage (exit 64, naming it), not the root's help and exit 0.
    static func main() async {
        if let unknown = unknownHelpTopic(Array(CommandLine.arguments.dropFirst())) {
            let names = configuration.subcommands.compactMap { $0.configuration.commandName }
            Output.error("help: no such command '\(unknown)' (commands: \(names.joined(separator: ", ")))")
            Foundation.exit(64)
        }
        await main(nil)
    }

    /// The first word after `help` that names no (sub)command, when the
    /// arguments parse as the `help` command; nil otherwise.
    static func unknownHelpTopic(_ arguments: [String]) -> String? {
        // ArgumentParser's help command is internal: known by its type's name.
        guard let command = try? parseAsRoot(arguments), String(describing: type(of: command)) == "HelpCommand",
              let start = arguments.firstIndex(of: "help") else { return nil }
        var choices = configuration.subcommands
        var path: [String] = []
        for word in arguments[arguments.index(after: start)...] where !word.hasPrefix("-") {
            guard let next = choices.first(where: { $0.configuration.commandName == word }) else {
                return (path + [word]).joined(separator: " ")
            }
            choices = next.configuration.subcommands
            path.append(word)
        }
        return nil
    }
}
