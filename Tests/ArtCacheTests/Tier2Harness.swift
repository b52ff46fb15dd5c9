import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheTier

/// The tier `scripts/tier2/start [DIR]` runs (a one-node Ceph with radosgw),
/// named by its env file: `ARTCACHE_TEST_TIER2_ENV=DIR/env` (`.ci/run`
/// sets it), else the one a start without DIR leaves at ``defaultEnv``. With
/// neither, the suites on the real store are skipped, saying why; with the
/// variable set, they run (an env that cannot be read fails them).
enum Tier2Harness {
    /// Where `bash scripts/tier2/start` with no DIR leaves its env (the script's `DEFAULT_DIR`).
    static let defaultEnv = "/tmp/artcache-tier2/env"

    /// The env file the suites use, or why there is none (the skip's comment).
    static let env: (path: String?, why: String) = {
        if let path = ProcessInfo.processInfo.environment["ARTCACHE_TEST_TIER2_ENV"], !path.isEmpty {
            return (path, "")
        }
        let start = "no second-tier store: run `bash scripts/tier2/start` (leaves \(defaultEnv); stop it with "
            + "`bash scripts/tier2/stop`), or set ARTCACHE_TEST_TIER2_ENV=DIR/env of a `scripts/tier2/start DIR`"
        guard FileManager.default.fileExists(atPath: defaultEnv) else { return (nil, start) }
        // A default store left by a start whose daemons are gone (a reboot): skipped, not failed.
        let gateway = (defaultEnv as NSString).deletingLastPathComponent + "/run/client.rgw.pid"
        guard let pid = (try? String(contentsOfFile: gateway, encoding: .utf8)).flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }),
              kill(pid, 0) == 0 else {
            return (nil, "\(defaultEnv) is there but its radosgw is not running: `bash scripts/tier2/stop`, then `bash scripts/tier2/start`")
        }
        return (defaultEnv, "")
    }()

    static var available: Bool { env.path != nil }
    /// The skip's comment (Swift Testing prints it).
    static var whySkipped: Comment { Comment(rawValue: env.why) }

    static let settings: Tier2Settings? = {
        guard let path = env.path, let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        var settings = Tier2Settings()
        settings.endpoint = values["ARTCACHE_TIER2_ENDPOINT"] ?? ""
        settings.bucket = values["ARTCACHE_TIER2_BUCKET"] ?? ""
        settings.region = values["ARTCACHE_TIER2_REGION"] ?? ""
        settings.accessKey = values["ARTCACHE_TIER2_ACCESS_KEY"] ?? ""
        settings.secretKey = values["ARTCACHE_TIER2_SECRET_KEY"] ?? ""
        settings.timeout = 10  // a loaded full run; the deadline is tested on its own
        return settings.isEnabled ? settings : nil
    }()

    /// The settings, or a failure naming the env file that gave none.
    static func required() throws -> Tier2Settings {
        try #require(settings, "\(env.path ?? "no env"): not a readable env of scripts/tier2/start")
    }

    /// Makes `settings.bucket` (a bucket a test keeps to itself), unless it is there.
    static func makeBucket(_ settings: Tier2Settings, _ downloader: Downloader) async throws {
        var create = EndpointRequest(url: settings.endpoint + "/" + settings.bucket, method: "PUT", timeout: 10)
        create.sigV4 = (settings.region, "s3", settings.accessKey, settings.secretKey)
        create.headers = ["x-amz-content-sha256: " + ObjectStore.emptyPayload]
        create.body = Data()
        let created = try await downloader.endpoint(create, priority: PriorityHandle(.normal))
        #expect(created.status == 200 || created.status == 409, "\(created.status)")
    }

    static func environment(_ settings: Tier2Settings) -> [String: String] {
        ["ARTCACHE_TIER2_ENDPOINT": settings.endpoint, "ARTCACHE_TIER2_BUCKET": settings.bucket,
         "ARTCACHE_TIER2_REGION": settings.region, "ARTCACHE_TIER2_ACCESS_KEY": settings.accessKey,
         "ARTCACHE_TIER2_SECRET_KEY": settings.secretKey]
    }
}
