import Foundation
import Testing
@testable import ArtCacheCore
@testable import ArtCacheRender

/// Known answers from the PyPI port `thumbhash-python` 1.0.1
/// (`rgba_to_thumbhash`), on images built from formulas here and there alike.
@Suite("ThumbHash known answers")
struct ThumbHashTests {
    static func image(_ name: String, _ w: Int, _ h: Int) -> [UInt8] {
        var pixels: [Int] = []
        for y in 0..<h {
            for x in 0..<w {
                switch name {
                case "gradient": pixels += [x * 8 % 256, y * 8 % 256, 128, 255]
                case "checker":
                    let v = (x / 5 + y / 5) % 2 == 1 ? 230 : 20
                    pixels += [v, v / 2 + 10, 255 - v, 255]
                case "fade": pixels += [200, (x * 13) % 256, 40, min(255, y * 6)]
                case "pattern": pixels += [(x * x + 3 * y) % 256, (7 * x + y * y) % 256, (x * y) % 256, 255]
                case "pixel": pixels += [12, 200, 99, 255]
                default: pixels += [0, 0, 0, 0]
                }
            }
        }
        return pixels.map { UInt8($0) }
    }

    static let answers: [(String, Int, Int, String)] = [
        ("gradient", 32, 32, "df070a371a70778780788887887888788887080787708f08"),
        ("checker", 40, 20, "1b670214807878784737278877088707888780"),
        ("fade", 20, 40, "de9b861a0c3770b788887870b7f8787478788088887888"),
        ("pattern", 100, 75, "1ff8010d824243312023135165257663ef8dad0942"),
        ("pixel", 1, 1, "1a8834175c08f708888788708f7088f80888808008f7870f"),
        ("clear", 8, 8, "00088205000000000000000000000000000000000000000000"),
    ]

    @Test(arguments: answers.indices)
    func matchesTheReferencePort(_ index: Int) throws {
        let (name, w, h, expected) = Self.answers[index]
        let hash = try ThumbHash.encode(width: w, height: h, rgba: Self.image(name, w, h))
        #expect(hash.map { String(format: "%02x", $0) }.joined() == expected, "\(name) \(w)x\(h)")
    }

    /// Decoded at the default 32 px: size and the SHA-256 of the RGBA bytes
    /// (`thumbhash_to_rgba` of the same port).
    static let decoded: [(Int, Int, String)] = [
        (32, 32, "a305273073c9ad8130014c2fda47ccb6594ba653c62e52dc09cf562ef2386bd3"),
        (32, 18, "a7f2f13a8d7653027829032f7787081d1d46387ee2699dc186384654ba5a35c7"),
        (19, 32, "fc6ae6793f325f742b082499c96a930c75c97336c18e2000add9dafcd521ed8c"),
        (32, 23, "4f924dd9e25394a958956b20a041c4b382b8f5f2e7a1f1b908e55640d94357e7"),
        (32, 32, "4dd0f41e740c8bd4f87dd323a986f58d50cde81444db516ec2a719f2c01fedc7"),
        (32, 32, "e04c5a3b8fdb00c5d4e272e9ffdedfd3bc06f30dcf8c3f36a3917ff28b970f15"),
    ]

    @Test(arguments: answers.indices)
    func decodesAsTheReferencePort(_ index: Int) throws {
        let (name, w, h, _) = Self.answers[index]
        let hash = try ThumbHash.encode(width: w, height: h, rgba: Self.image(name, w, h))
        let image = try ThumbHash.decode(hash)
        let (width, height, digest) = Self.decoded[index]
        #expect(image.width == width && image.height == height, "\(name)")
        #expect(CacheKey.sha256Hex(Data(image.rgba)) == digest, "\(name)")
    }

    @Test func aTruncatedHashIsMalformed() {
        #expect(throws: ThumbHash.Malformed(length: 4)) { try ThumbHash.decode([1, 2, 3, 4]) }
        // Announces alpha (bit 23) but ends before its byte.
        #expect(throws: ThumbHash.Malformed(length: 5)) { try ThumbHash.decode([0, 0, 0x80, 7, 0]) }
        // Announces 7 luminance terms and has none.
        #expect(throws: ThumbHash.Malformed(length: 5)) { try ThumbHash.decode([0, 0, 0, 7, 0]) }
    }

    @Test func refusesWhatItCannotEncode() {
        #expect(throws: ThumbHash.Failure.unsupportedSize(width: 101, height: 10)) {
            try ThumbHash.encode(width: 101, height: 10, rgba: [UInt8](repeating: 0, count: 101 * 10 * 4))
        }
        #expect(throws: ThumbHash.Failure.unsupportedSize(width: 0, height: 10)) {
            try ThumbHash.encode(width: 0, height: 10, rgba: [])
        }
        #expect(throws: ThumbHash.Failure.sizeMismatch(expected: 16, got: 15)) {
            try ThumbHash.encode(width: 2, height: 2, rgba: [UInt8](repeating: 0, count: 15))
        }
    }
}
