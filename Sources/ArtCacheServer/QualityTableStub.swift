// TEMPORARY (removed when Benchmarks/quality/calibrate's generated
// ArtCacheRender/Rendering/QualityTable.swift lands): the figures.
enum QualityTable {
    enum SizeClass: Int, Sendable, CaseIterable {
        case small = 100, medium = 300, large = 600
        init(longEdge: Int) { self = longEdge <= 150 ? .small : longEdge <= 450 ? .medium : .large }
    }
    enum Codec: String, Sendable, CaseIterable { case jpeg, webp, avif }
    static func meanBytes(_ codec: Codec, size: SizeClass) -> Int {
        switch (codec, size) {
        case (.jpeg, .small): 3100
        case (.jpeg, .medium): 21400
        case (.jpeg, .large): 70000
        case (.webp, .small): 2600
        case (.webp, .medium): 19200
        case (.webp, .large): 60000
        case (.avif, .small): 2200
        case (.avif, .medium): 9000
        case (.avif, .large): 30000
        }
    }
    static func encodeMillis(_ codec: Codec, size: SizeClass) -> Double {
        switch (codec, size) {
        case (.jpeg, .small): 0.06
        case (.jpeg, .medium): 0.26
        case (.jpeg, .large): 1
        case (.webp, .small): 1.2
        case (.webp, .medium): 7.8
        case (.webp, .large): 30
        case (.avif, .small): 2.5
        case (.avif, .medium): 9.9
        case (.avif, .large): 40
        }
    }
}
