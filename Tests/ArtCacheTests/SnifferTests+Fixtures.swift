@testable import ArtCacheCore
@testable import ArtCacheFetch
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

// MARK: - Hand-made fixtures

/// One hand-made body and what the sniffer must say about it.
struct SniffCase: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let format: SniffedFormat
    var animated = false
    var compressedSVG = false

    var testDescription: String { name }
    var expected: SniffResult { SniffResult(format: format, isAnimated: animated, isCompressedSVG: compressedSVG) }
}

enum SniffFixtures {
    static func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }
    static func be32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }
    static func le32(_ value: Int) -> [UInt8] { [0, 8, 16, 24].map { UInt8((value >> $0) & 0xFF) } }
    static func le16(_ value: Int) -> [UInt8] { [0, 8].map { UInt8((value >> $0) & 0xFF) } }

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    static func pngChunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(payload.count) + ascii(type) + payload + [0, 0, 0, 0]
    }
    static let ihdr = pngChunk("IHDR", be32(1) + be32(1) + [8, 6, 0, 0, 0])
    static func png(_ chunks: [[UInt8]]) -> [UInt8] { pngSignature + ihdr + chunks.flatMap { $0 } + pngChunk("IEND", []) }

    static func riffChunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        ascii(type) + le32(payload.count) + payload + (payload.count % 2 == 1 ? [0] : [])
    }
    static func webp(_ chunks: [[UInt8]]) -> [UInt8] {
        let body = ascii("WEBP") + chunks.flatMap { $0 }
        return ascii("RIFF") + le32(body.count) + body
    }
    static func vp8x(flags: UInt8) -> [UInt8] { riffChunk("VP8X", [flags, 0, 0, 0, 9, 0, 0, 9, 0, 0]) }

    static func ftyp(_ major: String, _ compatible: [String]) -> [UInt8] {
        let payload = ascii(major) + [0, 0, 0, 0] + compatible.flatMap { ascii($0) }
        return be32(payload.count + 8) + ascii("ftyp") + payload + be32(8) + ascii("mdat")
    }

    /// GIF89a 1x1 with a 2-entry global colour table and `frames` frames,
    /// each preceded by a graphic control extension; optional NETSCAPE loop.
    static func gif(frames: Int, loop: Bool = false) -> [UInt8] {
        var bytes = ascii("GIF89a") + le16(1) + le16(1) + [0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
        if loop { bytes += [0x21, 0xFF, 11] + ascii("NETSCAPE2.0") + [3, 1, 0, 0, 0] }
        for _ in 0..<frames {
            bytes += [0x21, 0xF9, 4, 0, 10, 0, 0, 0]
            // descriptor with a local colour table, then LZW data
            bytes += [0x2C] + le16(0) + le16(0) + le16(1) + le16(1) + [0x80] + [1, 2, 3, 4, 5, 6]
            bytes += [2, 2, 0x44, 0x01, 0]
        }
        return bytes + [0x3B]
    }

    static let bmp: [UInt8] = ascii("BM") + le32(58) + [0, 0, 0, 0] + le32(54) + le32(40) + le32(1) + le32(1)
        + le16(1) + le16(24) + le32(0) + le32(4) + le32(2835) + le32(2835) + le32(0) + le32(0) + [0, 0, 255, 0]
    static func icoHeader(type: UInt8, count: Int) -> [UInt8] {
        [0, 0, type, 0] + le16(count) + [16, 16, 0, 0] + le16(1) + le16(32) + le32(104) + le32(6 + 16 * count)
    }
    static func utf16(_ text: String, littleEndian: Bool) -> [UInt8] {
        (littleEndian ? [0xFF, 0xFE] : [0xFE, 0xFF]) + text.utf16.flatMap { unit -> [UInt8] in
            let high = UInt8(unit >> 8), low = UInt8(unit & 0xFF)
            return littleEndian ? [low, high] : [high, low]
        }
    }
    /// `printf '<?xml version="1.0"?>\n<!-- made by hand -->\n<svg ...>...</svg>\n' | gzip -9n | base64`
    static let svgz = [UInt8](Data(base64Encoded: "H4sIAAAAAAACA3WMwQ7CIBBE7/2Kde+wqDdD6bdUISyJpQY2pf37ondvkzdvxk778oYtlJrWPOJVG5zcYC9KwTL7AM8DeM4elOq0bhG6nuuILPJ5ELXWdLvrtUS6GWOoGwgteeH+ZRA4pMjyy86W8JI/JTn73brhBCKFeOyQAAAA")!)
    /// `printf '{"not":"svg","but":"json inside gzip"}\n' | gzip -9n | base64`
    static let gzippedJSON = [UInt8](Data(base64Encoded: "H4sIAAAAAAACA6tWyssvUbJSKi5LV9JRSioFsbOK8/MUMvOKM1NSFdKrMguUarkAQmXxKScAAAA=")!)

    static let svgDoctypeWithSubset = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!-- Generator: hand -->
        <!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd" [
          <!ENTITY ns_a "http://example.com/a]>">
          <!-- a comment with ] and > inside -->
          <!ENTITY lol '<g id="x">lol</g>'>
        ]>
        <svg xmlns="http://www.w3.org/2000/svg" width="1" height="1">&lol;</svg>
        """

    static let cases: [SniffCase] = [
        // Raster magic
        SniffCase(name: "JPEG", bytes: [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + ascii("JFIF\0"), format: .jpeg),
        SniffCase(name: "MPO is JPEG", bytes: [0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x20] + ascii("Exif\0\0MPF\0"), format: .jpeg),
        SniffCase(name: "still PNG", bytes: png([pngChunk("IDAT", [1, 2, 3])]), format: .png),
        SniffCase(name: "APNG (acTL before IDAT)",
                  bytes: png([pngChunk("acTL", be32(2) + be32(0)), pngChunk("IDAT", [1, 2, 3])]),
                  format: .apng, animated: true),
        SniffCase(name: "PNG with acTL after IDAT is still PNG",
                  bytes: png([pngChunk("IDAT", [1, 2, 3]), pngChunk("acTL", be32(2) + be32(0))]), format: .png),
        SniffCase(name: "still GIF", bytes: gif(frames: 1), format: .gif),
        SniffCase(name: "still GIF with NETSCAPE loop", bytes: gif(frames: 1, loop: true), format: .gif),
        SniffCase(name: "animated GIF", bytes: gif(frames: 3, loop: true), format: .gif, animated: true),
        SniffCase(name: "GIF87a header only", bytes: ascii("GIF87a") + [1, 0, 1, 0, 0, 0, 0], format: .gif),
        SniffCase(name: "lossy WebP", bytes: webp([riffChunk("VP8 ", [0x9D, 0x01, 0x2A, 1, 0, 1, 0])]), format: .webp),
        SniffCase(name: "lossless WebP", bytes: webp([riffChunk("VP8L", [0x2F, 0, 0, 0, 0])]), format: .webp),
        SniffCase(name: "still VP8X WebP", bytes: webp([vp8x(flags: 0x10), riffChunk("VP8L", [0x2F, 0, 0, 0, 0])]),
                  format: .webp),
        SniffCase(name: "animated WebP (VP8X flag)", bytes: webp([vp8x(flags: 0x02), riffChunk("ANIM", [0, 0, 0, 0, 0, 0])]),
                  format: .webp, animated: true),
        SniffCase(name: "animated WebP (ANIM chunk only)", bytes: webp([vp8x(flags: 0), riffChunk("ANIM", [0, 0, 0, 0, 0, 0])]),
                  format: .webp, animated: true),
        SniffCase(name: "WebP containing SVG text",
                  bytes: webp([vp8x(flags: 0x08), riffChunk("EXIF", ascii("<?xml?><svg xmlns='x'></svg>")),
                               riffChunk("VP8L", [0x2F, 0, 0, 0, 0])]), format: .webp),
        SniffCase(name: "RIFF WAVE is not WebP", bytes: ascii("RIFF") + le32(4) + ascii("WAVEfmt ") + le32(0), format: .unknown),
        SniffCase(name: "BMP", bytes: bmp, format: .bmp),
        SniffCase(name: "text starting with BM", bytes: ascii("BMW makes cars, not bitmaps."), format: .text),
        SniffCase(name: "TIFF little-endian", bytes: ascii("II*\0") + le32(8) + [0, 0], format: .tiff),
        SniffCase(name: "TIFF big-endian", bytes: ascii("MM\0*") + be32(8) + [0, 0], format: .tiff),
        SniffCase(name: "BigTIFF", bytes: ascii("II+\0") + le16(8) + le16(0) + le32(16) + le32(0), format: .tiff),
        SniffCase(name: "BigTIFF big-endian", bytes: ascii("MM\0+") + [0, 8, 0, 0] + be32(0) + be32(16), format: .tiff),
        SniffCase(name: "ICO", bytes: icoHeader(type: 1, count: 1) + [UInt8](repeating: 0, count: 40), format: .ico),
        SniffCase(name: "CUR", bytes: icoHeader(type: 2, count: 1) + [UInt8](repeating: 0, count: 40), format: .ico),
        SniffCase(name: "ICO with zero entries", bytes: icoHeader(type: 1, count: 0), format: .unknown),
        SniffCase(name: "PSD", bytes: ascii("8BPS") + [0, 1, 0, 0, 0, 0, 0, 0], format: .psd),
        // Images in formats not taken: unsupported, not "not an image" (issue 36).
        SniffCase(name: "QOI", bytes: ascii("qoif") + be32(2) + be32(2) + [3, 0] + [UInt8](repeating: 0, count: 8), format: .qoi),
        SniffCase(name: "JPEG 2000 (JP2)", bytes: [0, 0, 0, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A] + be32(20) + ascii("ftypjp2 "),
                  format: .jp2),
        SniffCase(name: "JPEG 2000 codestream (J2K)", bytes: [0xFF, 0x4F, 0xFF, 0x51, 0x00, 0x29], format: .jp2),
        SniffCase(name: "TGA v2 (footer)", bytes: [0, 0, 10] + [UInt8](repeating: 0, count: 15) + [UInt8](repeating: 7, count: 40)
                  + le32(0) + le32(0) + ascii("TRUEVISION-XFILE.") + [0], format: .tga),
        SniffCase(name: "TGA v1 (header, 2x2 true colour)", bytes: [0, 0, 2, 0, 0, 0, 0, 0] + le16(0) + le16(0) + le16(2) + le16(2)
                  + [24, 0] + [UInt8](repeating: 9, count: 12), format: .tga),
        SniffCase(name: "TGA-like header with too few bytes", bytes: [0, 0, 2, 0, 0, 0, 0, 0] + le16(0) + le16(0) + le16(200) + le16(200)
                  + [24, 0] + [UInt8](repeating: 9, count: 12), format: .unknown),
        SniffCase(name: "PDF", bytes: ascii("%PDF-1.7\n%\u{e2}\u{e3}\n1 0 obj\n"), format: .pdf),
        // JPEG XL
        SniffCase(name: "JXL codestream", bytes: [0xFF, 0x0A, 0xFA, 0x7F, 0x01, 0x90, 0x08], format: .jxl),
        SniffCase(name: "JXL container",
                  bytes: [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A] + be32(20) + ascii("ftypjxl ")
                    + [0, 0, 0, 0] + ascii("jxl "), format: .jxl),
        // ISO-BMFF brands
        SniffCase(name: "ftyp heic", bytes: ftyp("heic", ["mif1", "heic"]), format: .heic),
        SniffCase(name: "ftyp heix", bytes: ftyp("heix", ["mif1"]), format: .heic),
        SniffCase(name: "ftyp msf1 + hevc", bytes: ftyp("msf1", ["msf1", "hevc"]), format: .heic),
        SniffCase(name: "ftyp mif1 + heic", bytes: ftyp("mif1", ["mif1", "heic"]), format: .heic),
        SniffCase(name: "ftyp mif1 only", bytes: ftyp("mif1", ["mif1", "miaf"]), format: .heif),
        SniffCase(name: "ftyp heif", bytes: ftyp("heif", []), format: .heif),
        SniffCase(name: "ftyp mif1 + avif", bytes: ftyp("mif1", ["mif1", "avif", "miaf"]), format: .avif),
        SniffCase(name: "ftyp avif", bytes: ftyp("avif", ["avif", "mif1", "miaf", "MA1B"]), format: .avif),
        SniffCase(name: "ftyp avis", bytes: ftyp("avis", ["avis", "msf1", "avif"]), format: .avif, animated: true),
        SniffCase(name: "ftyp msf1 + avis", bytes: ftyp("msf1", ["msf1", "avis"]), format: .avif, animated: true),
        SniffCase(name: "ftyp mp4 is not an image", bytes: ftyp("isom", ["isom", "iso2", "mp41"]), format: .unknown),
        // gzip
        SniffCase(name: "svgz", bytes: svgz, format: .svg, compressedSVG: true),
        SniffCase(name: "gzipped JSON", bytes: gzippedJSON, format: .unknown),
        // Review finding: a truncated gzip stream is not SVG, however SVG its start looks.
        SniffCase(name: "truncated svgz reaching <svg", bytes: Array(svgz.prefix(90)), format: .unknown),
        SniffCase(name: "svgz without its trailer", bytes: Array(svgz.dropLast(4)), format: .unknown),
        SniffCase(name: "svgz with a corrupt CRC", bytes: Array(svgz.dropLast(8)) + [0, 0, 0, 0] + Array(svgz.suffix(4)), format: .unknown),
        SniffCase(name: "truncated svgz ending in the prolog", bytes: Array(svgz.prefix(60)), format: .unknown),
        // SVG
        SniffCase(name: "bare SVG", bytes: ascii("<svg xmlns=\"http://www.w3.org/2000/svg\"/>"), format: .svg),
        SniffCase(name: "SVG with BOM, whitespace, declaration", bytes: [0xEF, 0xBB, 0xBF]
                    + ascii("\n  <?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>"), format: .svg),
        SniffCase(name: "SVG with comments and doctype subset", bytes: ascii(svgDoctypeWithSubset), format: .svg),
        SniffCase(name: "prefixed svg:svg root", bytes: ascii("<svg:svg xmlns:svg=\"http://www.w3.org/2000/svg\"/>"),
                  format: .svg),
        SniffCase(name: "UTF-16BE SVG", bytes: utf16("<?xml version=\"1.0\" encoding=\"UTF-16\"?><svg/>", littleEndian: false),
                  format: .svg),
        // HTML
        SniffCase(name: "doctype html", bytes: ascii("<!DOCTYPE html>\n<html><head><title>502</title>"), format: .html),
        SniffCase(name: "HTML 4 doctype", bytes: ascii("<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\">\n<HTML>"),
                  format: .html),
        SniffCase(name: "XHTML", bytes: ascii("<?xml version=\"1.0\"?>\n<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Strict//EN\" "
                    + "\"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd\">\n<html xmlns=\"http://www.w3.org/1999/xhtml\">"),
                  format: .html),
        SniffCase(name: "haproxy 503", bytes: ascii("<html><body><h1>503 Service Unavailable</h1>\nNo server is available.</body></html>\n"),
                  format: .html),
        SniffCase(name: "nginx error", bytes: ascii("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502</h1></center>"),
                  format: .html),
        SniffCase(name: "cloudflare comment first", bytes: ascii("<!--[if lt IE 7]> <html class=\"no-js ie6\"> <![endif]-->\n<html>"),
                  format: .html),
        SniffCase(name: "bare head", bytes: ascii("  <HEAD><META http-equiv=\"refresh\" content=\"0\"></HEAD>"), format: .html),
        SniffCase(name: "bare title", bytes: ascii("<title>Error</title>"), format: .html),
        SniffCase(name: "bare h1", bytes: ascii("<h1>Not Found</h1>"), format: .html),
        SniffCase(name: "bare p", bytes: ascii("<p>Oops</p>"), format: .html),
        SniffCase(name: "bare div", bytes: ascii("<div class=\"error\">x</div>"), format: .html),
        SniffCase(name: "bare script", bytes: ascii("<script>location.href='/'</script>"), format: .html),
        SniffCase(name: "bare center", bytes: ascii("<CENTER>nginx</CENTER>"), format: .html),
        SniffCase(name: "UTF-16LE HTML", bytes: utf16("<!doctype html><p>hi</p>", littleEndian: true), format: .html),
        // XML
        SniffCase(name: "XML declaration + rss", bytes: ascii("<?xml version=\"1.0\"?>\n<rss version=\"2.0\"></rss>"), format: .xml),
        SniffCase(name: "bare XML element", bytes: ascii("<Error><Code>AccessDenied</Code></Error>"), format: .xml),
        SniffCase(name: "plist with doctype", bytes: ascii("<?xml version=\"1.0\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" "
                    + "\"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\"/>"), format: .xml),
        SniffCase(name: "XML declaration only", bytes: ascii("<?xml version=\"1.0\"?>"), format: .xml),
        // JSON
        SniffCase(name: "JSON object", bytes: ascii("{\"message\":\"Not Found\"}"), format: .json),
        SniffCase(name: "JSON array with whitespace", bytes: ascii(" \n[1, 2, {\"a\": null}]\n"), format: .json),
        SniffCase(name: "empty JSON array", bytes: ascii("[]"), format: .json),
        SniffCase(name: "JSON with BOM", bytes: [0xEF, 0xBB, 0xBF] + ascii("{\"a\":true}"), format: .json),
        SniffCase(name: "broken JSON is text", bytes: ascii("{ this is not json"), format: .text),
        SniffCase(name: "bracketed text is text", bytes: ascii("[INFO] started"), format: .text),
        // Plain text and others
        SniffCase(name: "plain text", bytes: ascii("Service Unavailable\n"), format: .text),
        SniffCase(name: "whitespace only", bytes: ascii(" \n\t \r\n"), format: .text),
        SniffCase(name: "UTF-8 text", bytes: ascii("Grüße, 世界 🎨\n"), format: .text),
        SniffCase(name: "cut multi-byte character at the end", bytes: ascii("caf") + [0xE2, 0x82], format: .text),
        SniffCase(name: "UTF-16LE text", bytes: utf16("hello, wörld 🎨", littleEndian: true), format: .text),
        SniffCase(name: "UTF-16BE text", bytes: utf16("hello", littleEndian: false), format: .text),
        SniffCase(name: "less-than text", bytes: ascii("< 3 apples"), format: .text),
        SniffCase(name: "Latin-1 is not UTF-8", bytes: ascii("caf") + [0xE9] + ascii(" au lait"), format: .unknown),
        SniffCase(name: "NUL byte", bytes: ascii("abc\0def"), format: .unknown),
        SniffCase(name: "control characters", bytes: [1, 2, 3, 4, 5, 6, 7, 8], format: .unknown),
        SniffCase(name: "TGA header (no magic)", bytes: [0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xB1, 1, 0xB1, 1, 24, 0], format: .unknown),
        SniffCase(name: "empty", bytes: [], format: .empty),
    ]
}

