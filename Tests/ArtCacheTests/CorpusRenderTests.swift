@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// Every real image of `../shared/corpus` through sniffing and rendering: each
/// ends as a valid thumbnail or a typed error; bombs are refused from their
/// header. Skipped when the corpus is absent.
@Suite("Corpus through the renderer", .enabled(if: Fixtures.corpusExists), .timeLimit(.minutes(5)))
struct CorpusRenderTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let path: String
        let category: String
        let width: Int
        let height: Int
        let pages: Int
        var testDescription: String { path }
    }

    static var rows: [Row] {
        guard let text = try? String(contentsOfFile: Fixtures.corpus + "/MANIFEST.tsv", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count > 5, f[0].hasPrefix("images/") else { return nil }
            return Row(path: f[0], category: f[1], width: Int(f[3]) ?? 0, height: Int(f[4]) ?? 0, pages: Int(f[5]) ?? 1)
        }
    }

    @Test(arguments: rows)
    func rendersOrFailsTyped(_ row: Row) async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: Fixtures.corpus + "/" + row.path))
        let sniffed = Sniffer.sniff(data)
        let declaredPixels = row.width * row.height * max(1, row.pages)
        do {
            let output = try await RenderTests.renderer.render(data, spec: VariantSpec(width: 100, height: 100))
            #expect(sniffed.format.isImage, "rendered a \(sniffed.format.displayName)")
            #expect(Sniffer.sniff(output.data).format.isImage)
            #expect(output.width >= 1 && output.width <= 100 && output.height >= 1 && output.height <= 100)
            #expect(declaredPixels <= 50_000_000, "a bomb was decoded")
        } catch let error as RenderError {
            // Bombs never reach pixel decoding: refused from the header, by
            // libheif's own limits, or because the header itself is unreadable.
            if row.category == "bombs" && declaredPixels > 50_000_000 && sniffed.format != .gif {
                #expect(error.code == .tooLarge || error.code == .unsupported, "\(error.code): \(error.message)")
            }
            #expect(!error.message.isEmpty)
        }
    }
}
