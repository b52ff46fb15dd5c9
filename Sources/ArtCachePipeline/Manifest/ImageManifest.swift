import ArtCacheCore
import ArtCacheRender
import ArtCacheResultSets
import Foundation

/// Everything a page needs to lay out a result set's images before any of
/// them arrives, per item in result order (``ImagePipeline/manifest(for:sizes:fit:signer:priority:)``).
/// Its JSON (the CLI's `manifest --json` and the service's
/// `POST /v1/manifest`) uses exactly these field names: `index`, `id`,
/// `url`, `fetched_url`, `status`, `reason`, `retry_after`, `width`,
/// `height`, `color`, `thumbhash`, `placeholder`, `variants`.
public struct ImageManifest: Sendable, Equatable, Codable {
    /// Whether an item's original is in the cache.
    public enum Status: String, Sendable, Codable {
        /// Stored: its size and placeholder are given.
        case cached
        /// Not yet: handed to the prefetcher at low priority.
        case pending
        /// Its download failed for a reason that passes (the network, the
        /// host offline) and waits in the retry queue: `reason`, and
        /// `retry_after` seconds until it is tried again.
        case retrying
        /// It cannot be shown, and asking again will not change that for
        /// now (`reason`): the origin answered 404, 410, 5xx after the
        /// retries, or something that is not an image; the original is too
        /// large; its address or source is refused; or it is stored but
        /// cannot be rendered (truncated, corrupt, too many pixels).
        case failed
    }

    /// How a page asks for one display size at one density: a signed
    /// service path (a JSON string), or, without a signer, what to request
    /// (`{"url", "size", "fit"}`).
    public struct Reference: Sendable, Equatable, Codable {
        public let path: String?
        public let url: String?
        public let size: String?
        public let fit: String?

        enum CodingKeys: String, CodingKey { case url, size, fit }

        init(path: String?, url: String?, size: String?, fit: String?) {
            self.path = path
            self.url = url
            self.size = size
            self.fit = fit
        }

        init(path: String) {
            self.init(path: path, url: nil, size: nil, fit: nil)
        }

        init(url: String, size: ImageSize, fit: VariantSpec.Fit) {
            self.init(path: nil, url: url, size: size.description, fit: fit.rawValue)
        }

        public init(from decoder: any Decoder) throws {
            if let path = try? decoder.singleValueContainer().decode(String.self) {
                self.init(path: path)
                return
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(path: nil, url: try container.decode(String.self, forKey: .url),
                      size: try container.decode(String.self, forKey: .size), fit: try container.decode(String.self, forKey: .fit))
        }

        public func encode(to encoder: any Encoder) throws {
            if let path {
                var single = encoder.singleValueContainer()
                try single.encode(path)
                return
            }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(url, forKey: .url)
            try container.encode(size, forKey: .size)
            try container.encode(fit, forKey: .fit)
        }
    }

    /// One result with an image.
    public struct Item: Sendable, Equatable, Codable {
        /// Its position in the result set's items (0-based).
        public let index: Int
        /// The track, repository, user or tweet id, where the result set has one.
        public let id: String?
        /// The image URL as the result set gives it.
        public let url: String
        /// The URL the stored bytes came from (a provider profile's
        /// rendition, else `url`); null until cached.
        public let fetchedURL: String?
        public let status: Status
        /// Why it failed or is retrying (a typed reason: `timeout`, `dns`,
        /// `http_404`, `too_large`, `decode`…); null otherwise.
        public let reason: String?
        /// For `retrying`: seconds until it is tried again (0: it may be
        /// now); null otherwise.
        public let retryAfter: Int?
        /// The original's upright pixels, dominant colour (`#rrggbb`),
        /// ThumbHash (base64) and its decoded image as a PNG data URL: null
        /// until cached.
        public let width: Int?
        public let height: Int?
        public let color: String?
        public let thumbhash: String?
        public let placeholder: String?
        /// An animated GIF or WebP original, and its frames: null until cached.
        public let animated: Bool?
        public let frames: Int?
        /// Per requested display size (`"100x100"`): `"1x"`, `"2x"`, `"3x"`.
        public let variants: [String: [String: Reference]]

        enum CodingKeys: String, CodingKey {
            case index, id, url, fetchedURL = "fetched_url", status, reason, retryAfter = "retry_after", width, height, color, thumbhash,
                 placeholder, animated, frames, variants
        }

        public func encode(to encoder: any Encoder) throws {
            // Every field present (null when unknown): a page reads one shape.
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(index, forKey: .index)
            try container.encode(id, forKey: .id)
            try container.encode(url, forKey: .url)
            try container.encode(fetchedURL, forKey: .fetchedURL)
            try container.encode(status, forKey: .status)
            try container.encode(reason, forKey: .reason)
            try container.encode(retryAfter, forKey: .retryAfter)
            try container.encode(width, forKey: .width)
            try container.encode(height, forKey: .height)
            try container.encode(color, forKey: .color)
            try container.encode(thumbhash, forKey: .thumbhash)
            try container.encode(placeholder, forKey: .placeholder)
            try container.encode(animated, forKey: .animated)
            try container.encode(frames, forKey: .frames)
            try container.encode(variants, forKey: .variants)
        }
    }

    /// The result set's format (`itunes`, `github-users`, …).
    public let format: ResultSetFormat
    public let items: [Item]

    /// The manifest as JSON (stable keys, sorted; for the CLI and the service).
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
