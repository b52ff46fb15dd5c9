import ArtCacheFetch
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An S3 answer's XML body read flat, with FoundationXML's parser (text
/// entity-decoded, CDATA included): the root's name, the text of its
/// direct children, and, for each child named `record`, the text of that
/// child's own children. What the tier reads of the store (a bucket
/// listing, a `DeleteResult`) is that shape.
struct S3Answer {
    var root: String
    /// The text of the root's direct children without children of their own (`IsTruncated`…).
    var fields: [String: String] = [:]
    /// One dictionary per `record` element (`Contents`, `Error`), in order.
    var records: [[String: String]] = []

    /// Reads `body`, whose root must be `root`; `what` names the answer in
    /// errors. A body that is not XML, has another root, or is cut short is
    /// an error (FoundationXML on Linux takes a document cut short for a
    /// whole one: the root's end is checked).
    static func parse(_ body: Data, root: String, record: String, what: String) throws(DownloadError) -> S3Answer {
        let reader = Reader(record: record)
        let parser = XMLParser(data: body)
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        guard parser.parse(), reader.answer.root == root, reader.ended else {
            let why = parser.parserError.map { "\($0.localizedDescription)" }
                ?? (reader.answer.root == root ? "cut short" : "the root is <\(reader.answer.root)>")
            throw DownloadError(.network, "tier2: \(what) is not a \(root) (\(why))")
        }
        return reader.answer
    }

    private final class Reader: NSObject, XMLParserDelegate {
        let record: String
        var answer = S3Answer(root: "")
        /// The root element's end was read.
        var ended = false
        /// The open elements below the root.
        private var path: [String] = []
        private var text = ""

        init(record: String) { self.record = record }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            if answer.root.isEmpty, path.isEmpty, !ended { answer.root = name; return }
            path.append(name)
            text = ""
            if path == [record] { answer.records.append([:]) }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, foundCDATA block: Data) { text += String(decoding: block, as: UTF8.self) }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard !path.isEmpty else { ended = true; return }
            defer { path.removeLast() }
            if path.count == 2, path[0] == record {
                answer.records[answer.records.count - 1][name] = text
            } else if path.count == 1, name != record {
                answer.fields[name] = text
            }
            text = ""
        }
    }
}
