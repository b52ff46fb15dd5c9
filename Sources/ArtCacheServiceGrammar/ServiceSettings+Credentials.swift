import ArtCacheCore
import Foundation

/// Signing keys handed over as a systemd credential
/// (`LoadCredential=keys:/etc/artcache/keys`; see ``CredentialFile``).
extension ServiceSettings {
    /// The credential's name (the file in `$CREDENTIALS_DIRECTORY`).
    package static let keysCredential = "keys"

    /// Where the signing keys come from, in order, for `--help` and the README.
    package static let keysOrder = "$CREDENTIALS_DIRECTORY/keys (the unit's LoadCredential=keys:/etc/artcache/keys: "
        + "one hex key per line, the first signs; blank lines and # comments ignored), "
        + "else ARTCACHE_SERVICE_KEYS=hex1,hex2, else [service] keys"

    /// The keys of a keys file: one hex key (at least 16 bytes) per line,
    /// the first signs; blank lines and lines starting with `#` are ignored.
    /// A file without a key, or with a line that is not one, is an error
    /// naming the file and the line: a key file that says nothing must not
    /// quietly fall back to other keys.
    package static func parseKeyFile(_ text: String, source: String) throws(ConfigError) -> [[UInt8]] {
        var keys: [[UInt8]] = []
        for (number, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)  // (a CRLF is one Character: a line end)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let key = parseHex(line), key.count >= 16 else {
                throw ConfigError(code: .invalidValue, source: source, key: "service.keys",
                                  message: "line \(number + 1) is not a hex key of at least 16 bytes (32 hex digits); make one with `openssl rand -hex 32`")
            }
            keys.append(key)
        }
        guard !keys.isEmpty else {
            throw ConfigError(code: .invalidValue, source: source, key: "service.keys",
                              message: "no key in the file (one hex key per line, the first signs)")
        }
        return keys
    }

    /// The keys of `$CREDENTIALS_DIRECTORY/keys` (read by ``CredentialFile``);
    /// nil when the variable is unset or empty or the folder holds no `keys`
    /// (nothing handed over: the environment's or the file's keys count).
    /// A file that is there but cannot be trusted, read, or holds no key is
    /// an error.
    package static func credentialKeys(environment: [String: String]) throws(ConfigError) -> [[UInt8]]? {
        guard let credential = try CredentialFile.read(keysCredential, environment: environment, key: "service.keys") else { return nil }
        return try parseKeyFile(credential.text, source: credential.path)
    }
}
