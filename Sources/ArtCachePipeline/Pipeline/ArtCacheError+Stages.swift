import ArtCacheCore
import ArtCacheFetch
import ArtCacheRender
import ArtCacheStore
import Foundation

/// How any stage's error becomes the public `ArtCacheError`: each stage
/// maps its own error by its typed code, never by its text (see
/// `ArtCacheError.init(_:)` next to `DownloadError`, `StoreError`,
/// `RenderError` and `ConfigError`); the stage error is kept as `underlying`.
extension ArtCacheError {
    /// Any error a stage may throw, mapped by type. Swift's own
    /// `CancellationError` is `.cancelled`.
    package init(any error: any Error, context: String) {
        switch error {
        case let error as ArtCacheError: self = error
        case let error as DownloadError: self.init(error)
        case let error as RenderError: self.init(error)
        case let error as StoreError: self.init(error)
        case let error as ConfigError: self.init(error)
        case is CancellationError: self = .cancelled(context)
        default: self.init(.storage, "\(context): \(error)", underlying: SendableDescription(error))
        }
    }
}

/// A non-Sendable error's text, kept as an underlying error.
struct SendableDescription: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ error: any Error) { description = "\(error)" }
}
