import ArtCacheFetch
import Foundation

/// The answer to S3 `DeleteObjects` in quiet mode (a `DeleteResult`
/// listing only the keys the store could not delete), read by
/// ``S3Answer`` (FoundationXML): keys and messages come back entity-decoded.
package enum DeleteResult {
    /// A key the store refused to delete, with its code and message.
    package struct Failure: Sendable, Equatable, CustomStringConvertible {
        package var key: String
        package var code: String
        package var message: String
        package var description: String { "\(key): \(code)" + (message.isEmpty ? "" : " (\(message))") }
    }

    /// The keys the store did not delete (empty: all were). An empty body
    /// is a quiet answer with nothing to report; a body that is not a whole
    /// `DeleteResult` is an error (a purge must not take what it cannot
    /// read for success).
    package static func failures(in body: Data) throws(DownloadError) -> [Failure] {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [] }
        let answer = try S3Answer.parse(body, root: "DeleteResult", record: "Error", what: "the DeleteObjects answer")
        return answer.records.map { Failure(key: $0["Key"] ?? "", code: $0["Code"] ?? "", message: $0["Message"] ?? "") }
    }
}
