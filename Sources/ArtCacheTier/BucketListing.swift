import ArtCacheFetch
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One page of a bucket's listing (S3 `ListObjectsV2`: a `ListBucketResult`),
/// read with FoundationXML's parser: keys come back entity-decoded
/// (`&amp;`, `&lt;`, numeric references) and in any script, as the store
/// sent them.
package struct BucketListing: Sendable, Equatable {
    /// One object of a listing.
    package struct Object: Sendable, Equatable {
        package var key: String
        package var lastModified: Date
        package var size: Int64
    }

    /// In key order, as the store lists them.
    package var objects: [Object] = []
    /// More objects follow (`IsTruncated`): ask again after the last key.
    package var truncated = false
    /// The store's token for the next page (`NextContinuationToken`), when it gives one.
    package var nextContinuationToken: String?

    package init(objects: [Object] = [], truncated: Bool = false, nextContinuationToken: String? = nil) {
        self.objects = objects
        self.truncated = truncated
        self.nextContinuationToken = nextContinuationToken
    }

    /// The page an answer's body holds. A body that is not XML, not a
    /// `ListBucketResult`, or has an object without its key or date is an
    /// error: a purge must not read a listing it cannot understand as an
    /// empty bucket.
    package static func parse(_ body: Data) throws(DownloadError) -> BucketListing {
        let reader = Reader()
        let parser = XMLParser(data: body)
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        let parsed = parser.parse()
        if let failure = reader.failure {
            throw DownloadError(.network, "tier2: the bucket listing is not understood: \(failure)")
        }
        // (FoundationXML on Linux takes a document cut short for a whole one: the root's end is checked.)
        guard parsed, reader.root == "ListBucketResult", reader.ended else {
            let why = parser.parserError.map { "\($0.localizedDescription)" }
                ?? (reader.root == "ListBucketResult" ? "cut short" : "the root is <\(reader.root ?? "")>")
            throw DownloadError(.network, "tier2: the bucket listing is not a ListBucketResult (\(why))")
        }
        return reader.listing
    }

    /// The delegate that collects a listing: the text of each element of
    /// the root and of its `<Contents>`, nothing else.
    private final class Reader: NSObject, XMLParserDelegate {
        var listing = BucketListing()
        var root: String?
        /// The root element's end was read.
        var ended = false
        var failure: String?
        /// The open elements below the root.
        private var path: [String] = []
        private var text = ""
        private var fields: [String: String] = [:]

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            if root == nil { root = name; return }
            path.append(name)
            text = ""
            if path == ["Contents"] { fields = [:] }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, foundCDATA block: Data) { text += String(decoding: block, as: UTF8.self) }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard !path.isEmpty else { ended = true; return }
            defer { path.removeLast() }
            switch path {
            case ["IsTruncated"]: listing.truncated = text.trimmingCharacters(in: .whitespaces) == "true"
            case ["NextContinuationToken"]: listing.nextContinuationToken = text
            case ["Contents", "Key"], ["Contents", "LastModified"], ["Contents", "Size"]: fields[name] = text
            case ["Contents"]: addObject(parser)
            default: break
            }
            text = ""
        }

        private func addObject(_ parser: XMLParser) {
            guard let key = fields["Key"], let modified = fields["LastModified"], let date = date(modified) else {
                failure = "an object without its Key or LastModified (\(fields))"
                parser.abortParsing()
                return
            }
            listing.objects.append(Object(key: key, lastModified: date, size: fields["Size"].flatMap { Int64($0) } ?? 0))
        }

        /// `2026-11-27T04:07:38.123Z` (RGW, S3), or without the fraction.
        private let fractional: ISO8601DateFormatter = {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter
        }()
        private let whole = ISO8601DateFormatter()

        private func date(_ text: String) -> Date? {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            return fractional.date(from: trimmed) ?? whole.date(from: trimmed)
        }
    }
}
