@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

// MARK: - Tests

@Suite("Sniffer")
struct SnifferTests {
    @Test("Hand-made bodies sniff as expected", arguments: SniffFixtures.cases)
    func handMade(_ sample: SniffCase) {
        #expect(Sniffer.sniff(Data(sample.bytes)) == sample.expected)
    }

    @Test("A Data slice with a non-zero start index is read correctly")
    func slicedData() {
        let sliced = Data([0xAA, 0xBB] + SniffFixtures.gif(frames: 2)).dropFirst(2)
        #expect(sliced.startIndex == 2)
        #expect(Sniffer.sniff(sliced) == SniffResult(format: .gif, isAnimated: true))
    }

    @Test("JSON over 1 MiB is judged from its prefix")
    func largeJSON() {
        let unterminated = "[" + String(repeating: "{\"a\":1},", count: 140_000)
        #expect(unterminated.utf8.count > Sniffer.jsonParseLimit)
        #expect(Sniffer.sniff(Data(unterminated.utf8)).format == .json)
        let small = "[" + String(repeating: "{\"a\":1},", count: 10)
        #expect(Sniffer.sniff(Data(small.utf8)).format == .text) // small enough to parse, and it fails
    }

    @Test("UTF-16 JSON is parsed")
    func utf16JSON() {
        #expect(Sniffer.sniff(Data(SniffFixtures.utf16("{\"a\": [1, 2]}", littleEndian: true))).format == .json)
    }

    @Test("A second GIF frame far into the body is found, within 1 MiB")
    func gifSecondFrameLate() {
        // One frame whose LZW data spans ~200 KiB of sub-blocks, then a second frame.
        var bytes = SniffFixtures.ascii("GIF89a") + SniffFixtures.le16(1) + SniffFixtures.le16(1) + [0, 0, 0]
        bytes += [0x2C] + SniffFixtures.le16(0) + SniffFixtures.le16(0) + SniffFixtures.le16(1) + SniffFixtures.le16(1) + [0, 2]
        for _ in 0..<800 { bytes += [255] + [UInt8](repeating: 0, count: 255) }
        bytes += [0]
        let oneFrame = bytes + [0x3B]
        bytes += [0x2C] + SniffFixtures.le16(0) + SniffFixtures.le16(0) + SniffFixtures.le16(1) + SniffFixtures.le16(1)
            + [0, 2, 2, 0x44, 0x01, 0, 0x3B]
        #expect(Sniffer.sniff(Data(oneFrame)) == SniffResult(format: .gif))
        #expect(Sniffer.sniff(Data(bytes)) == SniffResult(format: .gif, isAnimated: true))
    }

    @Test("The svgz fixture inflates with gunzipPrefix")
    func svgzFixtureInflates() throws {
        let inflated = try #require(gunzipPrefix(Data(SniffFixtures.svgz)))
        #expect(String(decoding: inflated, as: UTF8.self).contains("<svg"))
    }

    @Test("Format tables")
    func formatTables() {
        #expect(SniffedFormat.allCases.count == 24)
        let images: Set<SniffedFormat> = [.jpeg, .png, .apng, .gif, .webp, .bmp, .tiff, .ico, .heic, .heif, .avif, .jxl, .svg]
        for format in SniffedFormat.allCases {
            #expect(format.isImage == images.contains(format), "\(format)")
            #expect(!format.displayName.isEmpty)
            #expect(Sniffer.mediaType(ofContentType: format.mimeType) == format.mimeType)
        }
        #expect(Set(SniffedFormat.allCases.map(\.mimeType)).count == SniffedFormat.allCases.count)
        #expect(SniffedFormat.ico.mimeType == "image/x-icon")
        #expect(SniffedFormat.psd.mimeType == "image/vnd.adobe.photoshop")
        #expect(SniffedFormat.allCases.filter(\.isUnsupportedImage) == [.psd, .jp2, .tga, .qoi])
        #expect(SniffedFormat.empty.mimeType == "application/x-empty")
        #expect(SniffedFormat.unknown.mimeType == "application/octet-stream")
        #expect(SniffedFormat.jxl.displayName == "JPEG XL")
        #expect(SniffedFormat.text.displayName == "plain text")
        #expect(SniffResult(format: .webp, isAnimated: true).mimeType == "image/webp")
    }

    static let mediaTypeCases: [(String?, String?)] = [
        ("Image/JPEG; charset=x", "image/jpeg"),
        ("image/png", "image/png"),
        ("  image/webp  ", "image/webp"),
        ("text/html;charset=UTF-8", "text/html"),
        ("APPLICATION/JSON ; charset=utf-8", "application/json"),
        ("image/svg+xml", "image/svg+xml"),
        (nil, nil),
        ("", nil),
        ("   ", nil),
        ("; charset=utf-8", nil),
    ]

    @Test("mediaType(ofContentType:)", arguments: mediaTypeCases)
    func mediaType(header: String?, expected: String?) {
        #expect(Sniffer.mediaType(ofContentType: header) == expected)
    }

    struct MismatchCase: Sendable, CustomTestStringConvertible {
        let declared: String?
        let sniffed: SniffResult
        let mismatch: Bool
        var testDescription: String { "\(declared ?? "nil") vs \(sniffed.format) -> \(mismatch)" }
    }

    static let mismatchCases: [MismatchCase] = [
        MismatchCase(declared: "image/jpeg", sniffed: SniffResult(format: .jpeg), mismatch: false),
        MismatchCase(declared: "Image/JPEG; charset=binary", sniffed: SniffResult(format: .jpeg), mismatch: false),
        MismatchCase(declared: "image/jpg", sniffed: SniffResult(format: .jpeg), mismatch: false),
        MismatchCase(declared: "image/pjpeg", sniffed: SniffResult(format: .jpeg), mismatch: false),
        MismatchCase(declared: "image/png", sniffed: SniffResult(format: .png), mismatch: false),
        MismatchCase(declared: "image/x-png", sniffed: SniffResult(format: .png), mismatch: false),
        MismatchCase(declared: "image/png", sniffed: SniffResult(format: .apng, isAnimated: true), mismatch: false),
        MismatchCase(declared: "image/apng", sniffed: SniffResult(format: .apng, isAnimated: true), mismatch: false),
        MismatchCase(declared: "image/apng", sniffed: SniffResult(format: .png), mismatch: true),
        MismatchCase(declared: "image/x-icon", sniffed: SniffResult(format: .ico), mismatch: false),
        MismatchCase(declared: "image/vnd.microsoft.icon", sniffed: SniffResult(format: .ico), mismatch: false),
        MismatchCase(declared: "image/ico", sniffed: SniffResult(format: .ico), mismatch: false),
        MismatchCase(declared: "image/webp", sniffed: SniffResult(format: .webp, isAnimated: true), mismatch: false),
        MismatchCase(declared: "image/svg+xml", sniffed: SniffResult(format: .svg, isCompressedSVG: true), mismatch: false),
        MismatchCase(declared: "image/avif", sniffed: SniffResult(format: .avif, isAnimated: true), mismatch: false),
        MismatchCase(declared: "text/html; charset=utf-8", sniffed: SniffResult(format: .html), mismatch: false),
        MismatchCase(declared: "application/octet-stream", sniffed: SniffResult(format: .jpeg), mismatch: true),
        MismatchCase(declared: "application/octet-stream", sniffed: SniffResult(format: .svg), mismatch: true),
        MismatchCase(declared: nil, sniffed: SniffResult(format: .png), mismatch: true),
        MismatchCase(declared: "", sniffed: SniffResult(format: .gif), mismatch: true),
        MismatchCase(declared: "image/png", sniffed: SniffResult(format: .jpeg), mismatch: true),
        MismatchCase(declared: "image/jpeg", sniffed: SniffResult(format: .html), mismatch: true),
        MismatchCase(declared: "image/jpeg", sniffed: SniffResult(format: .empty), mismatch: true),
        MismatchCase(declared: "image/heic", sniffed: SniffResult(format: .heif), mismatch: true),
    ]

    @Test("isMismatch(declared:sniffed:)", arguments: mismatchCases)
    func mismatch(_ sample: MismatchCase) {
        #expect(Sniffer.isMismatch(declared: sample.declared, sniffed: sample.sniffed) == sample.mismatch)
    }

    // MARK: Corpus

    /// `<package root>/../shared/corpus`, the package root being three
    /// levels above this file (Tests/ArtCacheTests/SnifferTests.swift).
    static let corpusRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("../shared/corpus").standardizedFileURL.path

    /// What each MANIFEST `format` string must sniff as.
    static let manifestFormats: [String: SniffedFormat] = [
        "JPEG": .jpeg,
        "MPO (multi-picture JPEG)": .jpeg,
        "PNG": .png, // .apng when the row's edge_case says APNG
        "GIF": .gif,
        "WebP": .webp,
        "TIFF": .tiff,
        "BMP": .bmp,
        "ICO": .ico,
        "SVG": .svg,
        "SVGZ (gzip SVG)": .svg, // compressed; a truncated stream that never reaches <svg may be .unknown
        "HEIF/HEIC (HEVC)": .heic,
        "AVIF": .avif,
        "AVIF sequence": .avif, // animated
        "PDF": .pdf,
        "PSD": .psd,
        "TGA": .tga, // no magic bytes: a v2 file's footer
        "empty (0 bytes)": .empty,
        "HTML": .html,
        "JSON": .json,
        "text": .text,
    ]

    @Test("Every corpus file sniffs as its MANIFEST format",
          .enabled(if: FileManager.default.fileExists(atPath: SnifferTests.corpusRoot + "/MANIFEST.tsv")))
    func corpusMatchesManifest() throws {
        let manifestPath = Self.corpusRoot + "/MANIFEST.tsv"
        let manifest = try String(contentsOfFile: manifestPath, encoding: .utf8)
        var lines = manifest.split(whereSeparator: \.isNewline).map(String.init)
        let header = lines.removeFirst().components(separatedBy: "\t")
        let pathColumn = try #require(header.firstIndex(of: "path"))
        let formatColumn = try #require(header.firstIndex(of: "format"))
        let pagesColumn = try #require(header.firstIndex(of: "pages"))
        let edgeColumn = try #require(header.firstIndex(of: "edge_case"))
        var checked = 0
        for line in lines where !line.isEmpty {
            let columns = line.components(separatedBy: "\t")
            guard columns.count > max(pathColumn, formatColumn, pagesColumn, edgeColumn) else {
                Issue.record("MANIFEST row has too few columns: \(line)")
                continue
            }
            let path = columns[pathColumn], manifestFormat = columns[formatColumn]
            let pages = Int(columns[pagesColumn]) ?? 0, edgeCase = columns[edgeColumn]
            guard var expected = Self.manifestFormats[manifestFormat] else {
                Issue.record("row \(path): unknown MANIFEST format \"\(manifestFormat)\"")
                continue
            }
            guard let data = FileManager.default.contents(atPath: Self.corpusRoot + "/" + path) else {
                Issue.record("row \(path): file missing")
                continue
            }
            let result = Sniffer.sniff(data)
            checked += 1
            switch manifestFormat {
            case "PNG" where edgeCase.contains("APNG"):
                expected = .apng
                #expect(result.isAnimated, "row \(path): APNG should be animated")
            case "SVGZ (gzip SVG)":
                if edgeCase.contains("truncated"), result.format == .unknown { continue }
                #expect(result.isCompressedSVG, "row \(path): svgz should be flagged compressed")
            case "AVIF sequence":
                #expect(result.isAnimated, "row \(path): AVIF sequence should be animated")
            case "GIF", "WebP":
                #expect(result.isAnimated == (pages > 1), "row \(path): pages=\(pages), isAnimated=\(result.isAnimated)")
            default:
                break
            }
            #expect(result.format == expected, "row \(path) (\(manifestFormat)): sniffed \(result.format), expected \(expected)")
        }
        #expect(checked > 0)
    }
}
