import ArtCacheCore
import Foundation

/// `[tier2]`: the shared second tier, an S3-compatible bucket below each
/// node's own memory and disk (Ceph RGW, MinIO, S3...). Off while
/// `endpoint` is empty. The keys come from the environment
/// (`ARTCACHE_TIER2_ACCESS_KEY`, `ARTCACHE_TIER2_SECRET_KEY`) or the
/// service's credential `$CREDENTIALS_DIRECTORY/tier2`, never from a file.
package struct Tier2Settings: Sendable, Equatable {
    /// `http(s)://host[:port]` of the object store; path-style addressing.
    package var endpoint = ""
    package var bucket = "artcache"
    package var region = "us-east-1"
    package var accessKey = ""
    package var secretKey = ""
    /// Thumbnails are written to the tier too, and a node that has the
    /// original reads a thumbnail rendered elsewhere instead of rendering it.
    /// Off by default: a small thumbnail renders in about a tier round trip
    /// (1–3 ms); it pays for large or AVIF ones (10–70 ms to encode).
    package var variants = false
    /// The deadline of a read (connecting included): past it the miss goes
    /// to the origin. A tier on the same network answers in 1–10 ms.
    package var timeout: TimeInterval = 0.5
    /// The deadline of a write behind an answer.
    package var writeTimeout: TimeInterval = 10
    /// Failures in a row after which the tier is not asked for `coolDown`.
    package var offlineAfter = 3
    package var coolDown: TimeInterval = 30

    package init() {}

    package var isEnabled: Bool { !endpoint.isEmpty }

    /// A bucket name S3 accepts (3–63 of a–z, 0–9, `.`, `-`; starting and
    /// ending with a letter or digit): it is a path segment of every request.
    package static func isValidBucket(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count) else { return false }
        let allowed = { (b: UInt8) in (b >= 97 && b <= 122) || (b >= 48 && b <= 57) || b == 46 || b == 45 }
        let edge = { (b: UInt8) in (b >= 97 && b <= 122) || (b >= 48 && b <= 57) }
        return bytes.allSatisfy(allowed) && edge(bytes.first!) && edge(bytes.last!)
    }

    /// The name of the credential under `$CREDENTIALS_DIRECTORY`: two lines,
    /// the access key then the secret key.
    package static let credential = "tier2"

    /// The `tier2` credential's keys in place of the environment's; with an
    /// endpoint, both keys are required.
    package mutating func applyCredential(environment: [String: String], source: String) throws(ConfigError) {
        if let keys = try Self.credentialKeys(environment: environment) { (accessKey, secretKey) = (keys.access, keys.secret) }
        if isEnabled, accessKey.isEmpty || secretKey.isEmpty {
            throw ConfigError(code: .invalidValue, source: source, key: "tier2.access_key",
                              message: "tier2.endpoint is set: ARTCACHE_TIER2_ACCESS_KEY and ARTCACHE_TIER2_SECRET_KEY "
                                  + "(or the tier2 credential) are required")
        }
    }

    /// The keys of the `tier2` credential (read by ``CredentialFile``), when
    /// `$CREDENTIALS_DIRECTORY` holds one: two lines, the access key then
    /// the secret key.
    package static func credentialKeys(environment: [String: String]) throws(ConfigError) -> (access: String, secret: String)? {
        guard let credential = try CredentialFile.read(Self.credential, environment: environment, key: "tier2.access_key")
        else { return nil }
        let lines = credential.text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard lines.count == 2 else {
            throw ConfigError(code: .invalidValue, source: credential.path, key: "tier2.access_key",
                              message: "the tier2 credential holds two lines: the access key, then the secret key")
        }
        return (lines[0], lines[1])
    }
}
