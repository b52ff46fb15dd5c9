import ArgumentParser
import ArtCache
import Foundation

@main
struct ArtCacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "artcache",
        abstract: "An image artwork cache: prefetch, inspect, purge and verify.",
        discussion: """
            Settings come from cache.conf (\(Configuration.lookupOrder); \(Configuration.trustRule)), overridden by \
            ARTCACHE_<SECTION>_<KEY> variables, overridden by flags. cache.conf documents \
            every key (an installed package's copy: /etc/artcache/cache.conf).
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
}
