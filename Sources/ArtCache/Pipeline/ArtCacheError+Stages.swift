import Foundation

/// How each stage's own error becomes the public `ArtCacheError`: by its
/// typed code, never by its text. The stage error is kept as `underlying`.
extension ArtCacheError {
    init(_ error: DownloadError) {
        let code: Code = switch error.code {
        case .dns: .network(.dns)
        case .connect: .network(.connect)
        case .timeout: .network(.timeout)
        case .tls: .network(.tls)
        case .network: .network(.connection)
        case .truncated: .network(.truncated)
        case .tooManyRedirects: .network(.tooManyRedirects)
        case .refusedScheme: .network(.refusedScheme)
        case .blockedAddress: .network(.blockedAddress)
        case .blockedSource: .network(.blockedSource)
        case .hostOffline: .network(.hostOffline)
        case .queueFull: .network(.queueFull)
        case .tooLarge: .tooLarge
        case .httpStatus: .httpStatus(error.status ?? 0)
        case .notAnImage: .notAnImage
        case .invalidURL: .invalidURL
        case .cancelled: .cancelled
        }
        self.init(code, error.message, underlying: error)
    }

    init(_ error: RenderError) {
        let code: Code = switch error.code {
        case .unsupported, .encode: .unsupported
        case .tooLarge, .timedOut: .tooLarge
        case .decode: .decode
        }
        self.init(code, error.message, underlying: error)
    }

    init(_ error: StoreError) {
        let code: Code = switch error.code {
        case .invalidURL: .invalidURL
        case .notAnImage: .notAnImage
        case .invalidRequest: .invalidRequest
        case .missingParent, .staleSource, .io, .database, .incompatibleSchema: .storage
        case .storageFull: .storageFull
        }
        self.init(code, error.message, underlying: error)
    }

    init(_ error: ConfigError) {
        self.init(.configuration, error.description, underlying: error)
    }

    /// Any error a stage may throw, mapped by type. Swift's own
    /// `CancellationError` is `.cancelled`.
    init(any error: any Error, context: String) {
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
