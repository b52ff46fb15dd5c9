import ArtCacheFetch
import Foundation

/// One page of a bucket's listing (S3 `ListObjectsV2`: a `ListBucketResult`),
/// read by ``S3Answer`` (FoundationXML): keys come back entity-decoded
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
        let answer = try S3Answer.parse(body, root: "ListBucketResult", record: "Contents", what: "the bucket listing")
        var listing = BucketListing(truncated: answer.fields["IsTruncated"]?.trimmingCharacters(in: .whitespaces) == "true",
                                    nextContinuationToken: answer.fields["NextContinuationToken"])
        let dates = Dates()
        for fields in answer.records {
            guard let key = fields["Key"], let modified = fields["LastModified"], let date = dates.date(modified) else {
                throw DownloadError(.network, "tier2: the bucket listing is not understood: an object without its Key or "
                                    + "LastModified (\(fields))")
            }
            listing.objects.append(Object(key: key, lastModified: date, size: fields["Size"].flatMap { Int64($0) } ?? 0))
        }
        return listing
    }

    /// `2026-11-27T04:07:38.123Z` (RGW, S3), or without the fraction.
    private struct Dates {
        let fractional = ISO8601DateFormatter()
        let whole = ISO8601DateFormatter()

        init() { fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds] }

        func date(_ text: String) -> Date? {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            return fractional.date(from: trimmed) ?? whole.date(from: trimmed)
        }
    }
}
