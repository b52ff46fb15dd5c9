import ArgumentParser
import ArtCacheCore
import ArtCacheFetch
import ArtCachePipeline
import ArtCacheTier
import Foundation
import Logging

/// Options every subcommand accepts, before or after the subcommand name
/// (`artcache --cache-dir DIR stats` and `artcache stats --cache-dir DIR`).
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Configuration file.", discussion: "Lookup: \(Configuration.lookupOrder). \(Configuration.trustRule).",
                                            valueName: "path"))
    var config: String?

    @Option(name: .customLong("cache-dir"), help: "Cache directory (overrides [cache] directory).")
    var cacheDir: String?

    @Flag(name: .shortAndLong, help: "Log what happens to stderr.")
    var verbose = false

    /// These options, each one not given here taken from `parent` (the
    /// root command's: given before the subcommand name).
    func inheriting(_ parent: GlobalOptions) -> GlobalOptions {
        var merged = self
        merged.config = config ?? parent.config
        merged.cacheDir = cacheDir ?? parent.cacheDir
        merged.verbose = verbose || parent.verbose
        return merged
    }

    func configuration() throws -> Configuration {
        let environment = ProcessInfo.processInfo.environment
        // The library says which found files it passed over and why; the CLI tells.
        let lookup = Configuration.lookUp(explicitPath: config, environment: environment)
        for skipped in lookup.skipped { Output.warning("\(skipped)") }
        var configuration = try Configuration.load(lookup, environment: environment)
        if let cacheDir {
            let expanded = cacheDir.hasPrefix("~/") ? NSHomeDirectory() + cacheDir.dropFirst() : cacheDir
            configuration.cache.directory = URL(fileURLWithPath: expanded).standardizedFileURL.path
        }
        return configuration
    }

    /// ``configuration()`` with the signing keys of the service's credential,
    /// when one was handed over (`serve`, `sign`, `manifest --sign`):
    /// `$CREDENTIALS_DIRECTORY/keys`, else `ARTCACHE_SERVICE_KEYS`, else `[service] keys`.
    func signingConfiguration() throws -> Configuration {
        var configuration = try configuration()
        try configuration.applyCredentials()
        return configuration
    }

    /// ``configuration()`` for a one-shot command (`get`, `thumb`): its
    /// answer is stored before it returns (no store-behind), so a write that
    /// fails (`storage_full`...) is the command's error, and the path it
    /// prints exists.
    func storingConfiguration() throws -> Configuration {
        var configuration = try configuration()
        configuration.cache.writeBehindMax = 0
        return configuration
    }

    var logger: Logger {
        var logger = Logger(label: "artcache")
        logger.logLevel = verbose ? .debug : .warning
        return logger
    }

    /// Opens the image pipeline over the configured cache, runs `body`, and
    /// closes it (writing batched access times) whether `body` returns or throws.
    /// `readOnly` (`stats`, `verify` without `--repair`, `purge --dry-run`,
    /// `manifest`): a missing cache is an error (`no cache at DIR`), not a
    /// new one, and no mode of an existing one changes (`[cache] mode` is
    /// applied when a cache is created and by `verify --repair`).
    func withPipeline<T>(_ configuration: Configuration, readOnly: Bool = false,
                         _ body: (ImagePipeline) async throws -> T) async throws -> T {
        var configuration = configuration
        if readOnly { configuration.cache.access = .existing }
        let pipeline = try await ImagePipeline.open(configuration: configuration, logger: logger)
        let result: T
        do {
            result = try await body(pipeline)
        } catch {
            do {
                try await pipeline.close()
            } catch let closing {
                Output.error("\(closing)")  // reported, but the body's error is the one that decides the exit
            }
            throw error
        }
        // A stale answer this command gave is revalidated before it exits
        // (close() cancels background work; the other kinds wait for a
        // later process: a placeholder, a warm-up).
        await pipeline.waitForRevalidations()
        try await pipeline.close()
        return result
    }

    /// Runs `body` on the configured second tier (`stats --tier2`, `purge
    /// --tier2`), without opening the local cache; its failures name the tier.
    func withTier2<T>(_ configuration: Configuration, _ body: (Tier2) async throws -> T) async throws -> T {
        let settings = configuration.tier2
        // The command is right; the configuration lacks the tier (exit 78).
        guard settings.isEnabled else {
            throw ArtCacheError(.configuration, "tier2.endpoint: none is configured, and --tier2 needs one"
                                + " (set [tier2] endpoint or ARTCACHE_TIER2_ENDPOINT)")
        }
        let downloader = try Downloader(settings: configuration.download, logger: logger)
        defer { downloader.shutdown() }
        do {
            return try await body(Tier2(settings: settings, downloader: downloader, logger: logger))
        } catch {
            throw ArtCacheError(any: error, context: "tier2 \(settings.endpoint)")
        }
    }
}

/// Runs a command body, turning our typed errors into one line on stderr and
/// a non-zero exit (no stack traces for user errors). With `json`, a failed
/// request also prints `{"error": REASON, "message": TEXT}` on stdout, so
/// scripts read the reason (`storage_full`, `http_404`...) as they read a success.
func reportingErrors(json: Bool = false, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as ExitCode {
        throw error
    } catch let error as ArtCacheError where error.code == .configuration {
        Output.error("configuration error: \(error)")
        throw ExitCode(78)
    } catch let error as ArtCacheError {
        Output.error(error.message)
        if json { print(try Output.json(["error": error.reason, "message": error.message])) }
        throw ExitCode(1)
    } catch let error as UsageError {
        Output.error(error.description)
        throw ExitCode(64)
    } catch let error as ValidationError {
        // Usage found while running (after validate()): usage all the same.
        Output.error(error.message)
        throw ExitCode(64)
    } catch let error as CleanExit {
        throw error
    } catch {
        Output.error(Output.describe(error))
        throw ExitCode(1)
    }
}

enum Output {
    static func error(_ message: String) {
        FileHandle.standardError.write(Data("artcache: error: \(message)\n".utf8))
    }

    static func warning(_ message: String) {
        FileHandle.standardError.write(Data("artcache: warning: \(message)\n".utf8))
    }

    /// An error's text for a user: Foundation's file errors say what failed
    /// and the system's reason (`No such file or directory`), never
    /// `NSCocoaErrorDomain` and a number.
    static func describe(_ error: any Error) -> String {
        if let error = error as? CocoaError, let path = error.filePath ?? error.url?.path {
            return "\(path): \(FileErrorText.reason(error))"
        }
        return error is CocoaError || error is POSIXError ? FileErrorText.reason(error) : "\(error)"
    }

    /// `strerror(code)` as a clause: `no such file or directory`.
    static func systemReason(_ code: Int32) -> String { FileErrorText.system(code) }

    /// Writes `data` to the file at `path` (`-o`, `--contact-sheet`); a
    /// failure names the file and the system's reason.
    static func write(_ data: Data, to path: String) throws {
        do {
            try data.write(to: URL(fileURLWithPath: path))
        } catch {
            let reason = describe(error)
            throw OutputFileError(message: "cannot write " + (reason.hasPrefix(path + ": ") ? reason : "\(path): \(reason)"))
        }
    }

    /// Fails unless a file can be written at `path` (its folder exists
    /// and is writable, and it is not a folder itself): what a command that
    /// writes a file at its end checks before it starts.
    static func checkWritable(_ path: String, flag: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) else {
            throw OutputFileError(message: "\(flag) \(path): the folder \(folder) does not exist")
        }
        guard isDirectory.boolValue else { throw OutputFileError(message: "\(flag) \(path): \(folder) is not a folder") }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw OutputFileError(message: "\(flag) \(path): is a folder")
        }
        guard access(folder, W_OK) == 0 else {
            throw OutputFileError(message: "\(flag) \(path): cannot write in \(folder): \(systemReason(errno))")
        }
    }

    /// Stable JSON: snake_case keys, sorted, ISO 8601 dates.
    static func json<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// A file the command was asked to write could not be (exit 1).
struct OutputFileError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// An optional field of `--json` output that is always present: `null` when
/// absent (synthesized `Encodable` would drop the key).
@propertyWrapper
struct Nullable<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
