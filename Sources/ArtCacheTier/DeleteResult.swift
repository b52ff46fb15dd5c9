import ArtCacheFetch
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The answer to S3 `DeleteObjects` in quiet mode (a `DeleteResult`
/// listing only the keys the store could not delete), read with
/// FoundationXML's parser: keys and messages come back entity-decoded.
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
        let reader = Reader()
        let parser = XMLParser(data: body)
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        // (FoundationXML on Linux takes a document cut short for a whole one: the root's end is checked.)
        guard parser.parse(), reader.root == "DeleteResult", reader.ended else {
            let why = parser.parserError.map { "\($0.localizedDescription)" }
                ?? (reader.root == "DeleteResult" ? "cut short" : "the root is <\(reader.root ?? "")>")
            throw DownloadError(.network, "tier2: the DeleteObjects answer is not a DeleteResult (\(why))")
        }
        return reader.failures
    }

    /// Collects each `<Error>` of the root (its Key, Code, Message).
    private final class Reader: NSObject, XMLParserDelegate {
        var failures: [Failure] = []
        var root: String?
        var ended = false
        private var path: [String] = []
        private var text = ""
        private var fields: [String: String] = [:]

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            if root == nil { root = name; return }
            path.append(name)
            text = ""
            if path == ["Error"] { fields = [:] }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard !path.isEmpty else { ended = true; return }
            defer { path.removeLast() }
            if path.count == 2, path[0] == "Error" { fields[name] = text }
            if path == ["Error"] {
                failures.append(Failure(key: fields["Key"] ?? "", code: fields["Code"] ?? "", message: fields["Message"] ?? ""))
            }
            text = ""
        }
    }
}
