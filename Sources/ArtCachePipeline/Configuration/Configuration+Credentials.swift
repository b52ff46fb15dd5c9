import ArtCacheCore
import ArtCacheServiceGrammar
import Foundation

extension Configuration {
    /// The signing keys of the credential (`ServiceSettings.credentialKeys(environment:)`),
    /// when there is one, in place of those of `ARTCACHE_SERVICE_KEYS` and
    /// `[service] keys` (`ServiceSettings.keysOrder`). What signs or checks
    /// signatures (`serve`, `sign`, `manifest --sign`) calls this after loading.
    package mutating func applyCredentials(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ArtCacheError) {
        do throws(ConfigError) {
            if let keys = try ServiceSettings.credentialKeys(environment: environment) { service.keys = keys }
        } catch {
            throw ArtCacheError(error)
        }
    }
}
