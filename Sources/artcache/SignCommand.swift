import ArgumentParser
import ArtCacheCore
import ArtCachePipeline
import ArtCacheRender
import ArtCacheServer
import ArtCacheServiceGrammar
import Foundation
import Logging

struct SignCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Print the service path for an image URL, or the headers of a manifest request, signed with the first [service] key.",
        discussion: """
            Options follow the service's URL grammar (docs/http-api.md); with none, the original. \
            With --manifest FILE (and --sizes), prints the X-ArtCache-Expires and X-ArtCache-Signature headers \
            of POST /v1/manifest for that body, and a ready curl line; the signature expires after \
            [service] manifest_signature_max_age. \
            Keys: \(ServiceSettings.keysOrder) (the package's: sudo env CREDENTIALS_DIRECTORY=/etc/artcache artcache sign URL).
            """)

    @OptionGroup var own: GlobalOptions
    @ParentCommand var root: ArtCacheCommand
    /// The global options given after the subcommand name, else before it.
    var global: GlobalOptions { own.inheriting(root.global) }

    @Argument(help: "The source image URL (not with --manifest).")
    var url: String?

    @Option(help: ArgumentHelp("Sign a POST /v1/manifest request whose body is this file (a result set).", valueName: "file"))
    var manifest: String?

    @Option(help: ArgumentHelp("With --manifest: the sizes to ask for (the query's sizes=), e.g. 100x100,300x300.",
                               valueName: "sizes"))
    var sizes: String?

    @Option(help: "Thumbnail box WIDTHxHEIGHT, e.g. 300x300.")
    var size: String?

    @Option(help: "contain, cover or smart.")
    var fit: String?

    @Option(help: "auto, jpeg, webp, png or avif (auto negotiates from Accept).")
    var format: String?

    @Option(help: "Quality 1-100.")
    var quality: Int?

    @Option(help: "A preset from [presets].")
    var preset: String?

    /// `pri=`'s classes.
    enum PriorityClass: String, CaseIterable, ExpressibleByArgument {
        case high, normal, low
    }

    @Option(help: "The request's class, signed with the path (pri=): high, normal or low. The service queues higher classes first and sheds low ones first under overload.")
    var priority: PriorityClass?

    @Option(help: "Print a full URL with this base (e.g. http://127.0.0.1:8080).")
    var base: String?

    func validate() throws {
        if manifest != nil {
            guard url == nil else { throw ValidationError("give an image URL or --manifest FILE, not both") }
            guard size == nil, fit == nil, format == nil, quality == nil, preset == nil, priority == nil else {
                throw ValidationError("--size, --fit, --format, --quality, --preset and --priority sign image paths, not --manifest")
            }
            if let sizes {
                let parsed = sizes.split(separator: ",", omittingEmptySubsequences: false).map { ImageSize(String($0)) }
                guard !parsed.isEmpty, parsed.count <= 16, !parsed.contains(nil) else {
                    throw ValidationError("--sizes: expected 1 to 16 sizes like 100x100,300x300")
                }
            }
        } else {
            guard url != nil else { throw ValidationError("give the image URL to sign, or --manifest FILE") }
            guard sizes == nil else { throw ValidationError("--sizes goes with --manifest (an image path has --size)") }
        }
        if let size {
            _ = try Arguments.box(size)
            guard ImageSize(size) != nil else {
                throw ValidationError("--size \(size): each side must be at most \(ImageSize.maxSide) (the service's bound)")
            }
        }
        try Arguments.quality(quality)
        if manifest == nil {
            // The options' own grammar, before anything is read (`--fit bogus`: usage, exit 64).
            do {
                _ = try ThumbnailOptions(parsing: optionsText)
            } catch {
                throw ValidationError(error.message)
            }
        }
    }

    /// The options path segment these flags make (`original` with none).
    private var optionsText: String {
        var tokens: [String] = []
        if let size { tokens.append(size) }
        if let fit { tokens.append("fit=\(fit)") }
        if let format { tokens.append("f=\(format)") }
        if let quality { tokens.append("q=\(quality)") }
        if let preset { tokens.append("p=\(preset)") }
        if let priority { tokens.append("pri=\(priority.rawValue)") }
        return tokens.isEmpty ? "original" : tokens.joined(separator: ",")
    }

    func run() async throws {
        try await reportingErrors {
            let configuration = try global.signingConfiguration()
            if let manifest { return try signManifest(manifest, configuration: configuration) }
            guard let url else { return }
            let options = try ThumbnailOptions(parsing: optionsText)
            _ = try options.resolved(presets: configuration.presets)  // an unknown preset fails here, not at request time
            _ = try NormalizedURL(url)
            let signer = ServiceURLSigner(settings: configuration.service)
            guard signer.signs || configuration.service.allowUnsigned else {
                throw ArtCacheError(.configuration, "service.keys: no signing key (set [service] keys, ARTCACHE_SERVICE_KEYS or $CREDENTIALS_DIRECTORY/keys)")
            }
            let path = signer.path(for: url, options: options)
            print((base.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } ?? "") + path)
        }
    }

    /// The headers that sign `POST /v1/manifest[?sizes=…]` with `file` as
    /// its body, valid for `[service] manifest_signature_max_age`, and a
    /// curl line that sends it.
    private func signManifest(_ file: String, configuration: Configuration) throws {
        guard let body = FileManager.default.contents(atPath: file) else {
            throw ValidationError("--manifest \(file): cannot read file")
        }
        let signer = ServiceURLSigner(settings: configuration.service)
        let query = sizes.map { "sizes=\($0)" } ?? ""
        let expires = Int(Date().timeIntervalSince1970 + configuration.service.manifestSignatureMaxAge)
        guard let signature = signer.signature(method: "POST", path: "/v1/manifest", query: query, expires: expires,
                                               body: Array(body)) else {
            throw ArtCacheError(.configuration, "service.keys: no signing key (set [service] keys, ARTCACHE_SERVICE_KEYS or $CREDENTIALS_DIRECTORY/keys)")
        }
        let service = configuration.service
        let listen = service.host.contains(":") ? "[\(service.host)]:\(service.port)" : "\(service.host):\(service.port)"
        let origin = base.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } ?? "http://\(listen)"
        let url = origin + "/v1/manifest" + (query.isEmpty ? "" : "?" + query)
        print("X-ArtCache-Expires: \(expires)")
        print("X-ArtCache-Signature: \(signature)")
        print("curl -sS -X POST -H 'X-ArtCache-Expires: \(expires)' -H 'X-ArtCache-Signature: \(signature)' "
              + "-H 'Content-Type: application/json' --data-binary @\(Self.shellQuoted(file)) \(Self.shellQuoted(url))")
    }

    /// `text` in single quotes for a POSIX shell.
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
