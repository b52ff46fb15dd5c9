import ArgumentParser
import ArtCacheStore
import Foundation

/// A test-only writer (not part of the `artcache` product) used by the crash
/// and multi-process tests: stores synthetic PNG-signed items in the store
/// as fast as it can, from several processes at once.
@main
struct StressWrite: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "artcache-stress", abstract: "Write synthetic items into a cache (tests only).")

    @Option(name: .customLong("cache-dir"), help: "The cache directory (created if missing).") var cacheDir: String
    @Option var count = 100
    @Option(help: "Item sizes in bytes, used in turn (repeat the option to mix inline and file blobs).")
    var size: [Int] = [4096]
    @Option(help: "Puts in flight at once (they share group commits).") var concurrency = 1
    @Option var prefix = "http://stress.test/item"
    @Flag(help: "Also store a variant per item.") var variants = false
    @Flag(help: "Print a line after each stored item (unbuffered).") var progress = false
    @Flag(help: "Store behind, as a service miss does: a put returns before its commit (the line is printed then).")
    var behind = false

    func run() async throws {
        var settings = CacheSettings()
        settings.directory = cacheDir
        let store = try await CacheStore.open(settings: settings)
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let (sizes, prefix, variants, progress, behind) = (size, prefix, variants, progress, behind)
        let lanes = max(1, concurrency)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    for index in stride(from: lane, to: count, by: lanes) {
                        let size = sizes[index % sizes.count]
                        var bytes = signature
                        bytes += (0..<max(0, size - signature.count)).map { _ in UInt8.random(in: 0...255) }
                        let url = "\(prefix)\(index).png"
                        if behind {
                            let stored = try await store.putBehind(url: url, data: Data(bytes), contentType: "image/png", declaredType: "image/png")
                            if variants {
                                try await store.putVariantBehind(parent: stored, spec: "32x32", data: Data(bytes.prefix(size / 4 + 8)),
                                                                 contentType: "image/png", width: 32, height: 32)
                            }
                            _ = try await store.lookup(url: "\(prefix)\(index / 2).png")
                            if progress { FileHandle.standardOutput.write(Data("answered \(index)\n".utf8)) }
                            continue
                        }
                        let stored = try await store.put(url: url, data: Data(bytes), contentType: "image/png",
                                                         declaredType: "image/png")
                        if variants {
                            try await store.putVariant(parent: stored.cacheKey, spec: "32x32", data: Data(bytes.prefix(size / 4 + 8)),
                                                       contentType: "image/png", width: 32, height: 32)
                        }
                        _ = try await store.lookup(url: "\(prefix)\(index / 2).png")
                        if progress { FileHandle.standardOutput.write(Data("stored \(index)\n".utf8)) }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await store.close()
        print("wrote \(count)")
    }
}
