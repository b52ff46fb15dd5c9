import Foundation
import Testing
@testable import ArtCacheFetch
@testable import ArtCacheTier

/// Issue 50: the tier's bucket listing is read by an XML parser
/// (FoundationXML), not by searching for `<Key>`: keys come back decoded.
@Suite("Second tier: bucket listings")
struct BucketListingTests {
    static func listing(_ contents: String, truncated: Bool = false, token: String? = nil) -> Data {
        Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>artcache</Name><Prefix></Prefix>
            <KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>\(truncated)</IsTruncated>\
            \(token.map { "<NextContinuationToken>\($0)</NextContinuationToken>" } ?? "")
            \(contents)
            </ListBucketResult>
            """.utf8)
    }

    static func object(_ key: String, size: Int = 1) -> String {
        "<Contents><Key>\(key)</Key><LastModified>2026-11-27T04:07:38.123Z</LastModified><ETag>&quot;x&quot;</ETag>"
            + "<Size>\(size)</Size><StorageClass>STANDARD</StorageClass></Contents>"
    }

    /// Entities (named and numeric) are decoded; non-ASCII keys come back as
    /// sent; the store's own escapes never reach the key.
    @Test func keysAreEntityDecodedAndKeptInAnyScript() throws {
        let page = try BucketListing.parse(Self.listing(
            Self.object("keys/a&amp;b") + Self.object("keys/&lt;tag&gt;", size: 7) + Self.object("keys/caf\u{E9}/日本")
                + Self.object("keys/&#x263A;&#65;")))
        #expect(page.objects.map(\.key) == ["keys/a&b", "keys/<tag>", "keys/café/日本", "keys/☺A"])
        #expect(page.objects.map(\.size) == [1, 7, 1, 1])
        #expect(page.objects.allSatisfy { $0.lastModified == Date(timeIntervalSince1970: 1_795_752_458.123) })
        #expect(!page.truncated && page.nextContinuationToken == nil)
    }

    /// A truncated page says so and carries the store's token for the next
    /// one (itself entity-decoded); `CommonPrefixes` and the owner's fields
    /// are not objects.
    @Test func aTruncatedPageCarriesItsContinuationToken() throws {
        let contents = Self.object("originals/ab") + "<CommonPrefixes><Prefix>keys/</Prefix></CommonPrefixes>"
        let page = try BucketListing.parse(Self.listing(contents, truncated: true, token: "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&amp;x"))
        #expect(page.truncated)
        #expect(page.nextContinuationToken == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&x")
        #expect(page.objects == [BucketListing.Object(key: "originals/ab", lastModified: Date(timeIntervalSince1970: 1_795_752_458.123),
                                                     size: 1)])
        #expect(try BucketListing.parse(Self.listing("")) == BucketListing(), "an empty bucket")
    }

    /// What is not a listing is an error, never an empty page: a purge
    /// must not take an answer it cannot read for an empty bucket.
    @Test func whatIsNotAListingIsAnError() {
        let bad = ["", "not xml", "<Error><Code>AccessDenied</Code></Error>", "<ListBucketResult><Contents><Key>a</Key>",
                   "<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>",
                   "<ListBucketResult><Contents><Key>a</Key><LastModified>yesterday</LastModified></Contents></ListBucketResult>"]
        for body in bad {
            let error = #expect(throws: DownloadError.self, "\(body)") { try BucketListing.parse(Data(body.utf8)) }
            #expect(error?.message.contains("bucket listing") == true, "\(body): \(String(describing: error))")
        }
    }

    /// DeleteObjects' quiet answer lists only the keys the store refused:
    /// each comes back decoded with its code; none is success; what is not
    /// a whole DeleteResult is an error, never taken for success.
    @Test func deleteResultsNameTheRefusedKeysDecoded() throws {
        let answer = Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">            <Error><Key>keys/a&amp;b</Key><Code>AccessDenied</Code><Message>no &lt;way&gt;</Message></Error>            <Error><Key>keys/caf\u{E9}</Key><Code>InternalError</Code></Error></DeleteResult>
            """.utf8)
        #expect(try DeleteResult.failures(in: answer) == [
            DeleteResult.Failure(key: "keys/a&b", code: "AccessDenied", message: "no <way>"),
            DeleteResult.Failure(key: "keys/caf\u{E9}", code: "InternalError", message: ""),
        ])
        let quiet = Data(#"<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>"#.utf8)
        #expect(try DeleteResult.failures(in: quiet).isEmpty)
        #expect(try DeleteResult.failures(in: Data(" \n".utf8)).isEmpty, "an empty quiet answer: nothing refused")
        for bad in ["<html>busy</html>", "<DeleteResult><Error><Key>k</Key>", "not xml at all <"] {
            #expect(throws: DownloadError.self, "\(bad)") { try DeleteResult.failures(in: Data(bad.utf8)) }
        }
    }
}
