import Foundation

/// The first image file directory (page 0) of a TIFF, classic or BigTIFF,
/// read from the bytes alone: the fields that decide whether libvips can
/// decode it. A valid TIFF in a variant libvips has no reader for is
/// `unsupported`, not a corrupt file (issue 36, item 6).
///
/// Hostile bytes: every offset is checked against the data, the directory is
/// read once (at most ``maxEntries`` entries) and no value is followed
/// further than the bytes it names.
package struct TIFFDirectory: Sendable, Equatable {
    package var width = 0
    package var height = 0
    /// The first sample's width in bits (libtiff requires them all equal).
    package var bitsPerSample = 1
    package var samplesPerPixel = 1
    /// 1 unsigned, 2 signed, 3 IEEE float, 4 void, 5/6 complex.
    package var sampleFormat = 1
    package var compression = 1
    /// Absent in some files (libtiff guesses then).
    package var photometric: Int?
    /// 1 contiguous, 2 separate planes.
    package var planarConfiguration = 1
    package var tiled = false
    package var yCbCrSubsampling = (horizontal: 2, vertical: 2)

    package static let maxEntries = 4096

    package static func == (a: TIFFDirectory, b: TIFFDirectory) -> Bool {
        (a.width, a.height, a.bitsPerSample, a.samplesPerPixel, a.sampleFormat, a.compression)
            == (b.width, b.height, b.bitsPerSample, b.samplesPerPixel, b.sampleFormat, b.compression)
            && a.photometric == b.photometric && a.planarConfiguration == b.planarConfiguration && a.tiled == b.tiled
            && a.yCbCrSubsampling == b.yCbCrSubsampling
    }

    /// Reads the first directory, or nil when the bytes are not a TIFF whose
    /// first directory can be read (libvips then says what is wrong).
    package init?(_ data: Data) {
        guard let parsed = data.withUnsafeBytes({ Self.parse(SniffBytes($0)) }) else { return nil }
        self = parsed
    }

    package init() {}

    private static func parse(_ bytes: SniffBytes) -> TIFFDirectory? {
        guard let tiff = TIFFStructure(bytes), let count = tiff.entryCount,
              count > 0, count <= maxEntries, tiff.entries + count * tiff.entrySize <= bytes.count else { return nil }

        var directory = TIFFDirectory()
        var found = (width: false, height: false)
        for index in 0..<count {
            guard let (entry, tag, type, values) = tiff.entry(index) else { return nil }
            // Only SHORT (3), LONG (4) and LONG8 (16) values are read here.
            let width: Int
            switch type {
            case 3: width = 2
            case 4: width = 4
            case 16: width = 8
            default: continue
            }
            guard values >= 1, values <= bytes.count else { continue }  // a count no file this size holds
            // The first value, in the entry when it fits, else at its offset.
            let inline = values * width <= tiff.valueSize
            let field = tiff.valueField(of: entry)
            guard let at = inline ? field : tiff.uint(field, tiff.valueSize),
                  let value = tiff.uint(at, width) else { return nil }
            switch tag {
            case 256: directory.width = value; found.width = true
            case 257: directory.height = value; found.height = true
            case 258: directory.bitsPerSample = value
            case 259: directory.compression = value
            case 262: directory.photometric = value
            case 277: directory.samplesPerPixel = value
            case 284: directory.planarConfiguration = value
            case 322, 323, 324, 325: directory.tiled = true  // TileWidth/Length/Offsets/ByteCounts
            case 339: directory.sampleFormat = value
            case 530:
                let second = values >= 2 ? tiff.uint(at + width, width) : nil
                directory.yCbCrSubsampling = (value, second ?? value)
            default: break
            }
        }
        guard found.width, found.height else { return nil }
        return directory
    }

    /// Why libvips cannot decode this directory's image although it is a
    /// valid TIFF, or nil when it can (as far as the fields tell: a corrupt
    /// strip is still found by the decode). `codecConfigured` says whether
    /// the libtiff libvips uses has a compression scheme.
    ///
    /// The rules are those of libvips 8.14's TIFF reader (tiff2vips.c):
    /// its sample formats, its readers per photometric interpretation, and
    /// no tiled separate planes.
    package func undecodable(codecConfigured: (Int) -> Bool) -> String? {
        if !codecConfigured(compression) {
            return "compression \(Self.compressionName(compression)) is not in this build's libtiff"
        }
        // libtiff decodes it, but libvips asks it for RGB only from new-style
        // JPEG: the YCbCr samples come out as RGB (a red of 200,30,40 reads
        // 82,104,212), and a 4:2:0 stream fails as "subsampled".
        if compression == 6 {
            return "old-style JPEG compression (6) is not read correctly by libvips"
        }
        let bits = bitsPerSample, samples = samplesPerPixel
        guard (1...32).contains(bits), samples >= 1 else {
            return "\(bits)-bit samples are not read by libvips"
        }
        if tiled, planarConfiguration == 2, samples > 1 {
            return "tiled images with separate colour planes are not read by libvips"
        }
        let format = sampleFormat == 4 ? 1 : sampleFormat  // void reads as unsigned
        switch (bits, format) {
        case (1, 1...2), (2, 1...2), (4, 1...2), (8, 1...2), (16, 1...2), (32, 1...3): break
        case (_, 3): return "\(bits)-bit floating-point samples are not read by libvips"
        case (_, 5...6): return "complex samples are not read by libvips"
        default: return "\(bits)-bit samples are not read by libvips"
        }
        switch photometric {
        case 0?, 1?:  // grey: below 8 bits one band only, otherwise whole bytes
            if bits < 8, samples != 1 { return "\(bits)-bit grey with \(samples) samples per pixel is not read by libvips" }
        case 3?:  // palette: 1, 2, 4, 8 or 16 bits
            if ![1, 2, 4, 8, 16].contains(bits) { return "\(bits)-bit palette images are not read by libvips" }
        case 8? where bits == 8 || bits == 16:  // CIELab
            break
        case 32844?, 32845?:  // LogL, LogLuv
            if ![34676, 34677].contains(compression) { return "LogLuv without SGI log compression is not read by libvips" }
        default:
            if bits % 8 != 0 { return "\(bits)-bit samples with \(samples) per pixel are not read by libvips" }
            if photometric == 6, compression != 7,
               yCbCrSubsampling.horizontal != 1 || yCbCrSubsampling.vertical != 1 {
                return "chroma-subsampled YCbCr without JPEG compression is not read by libvips"
            }
        }
        return nil
    }

    static func compressionName(_ scheme: Int) -> String {
        let names: [Int: String] = [
            6: "old-style JPEG", 7: "JPEG", 8: "Deflate", 32946: "Deflate", 5: "LZW", 32773: "PackBits",
            34712: "JPEG 2000", 33003: "JPEG 2000", 33005: "JPEG 2000", 34892: "lossy JPEG", 34925: "LZMA",
            50000: "Zstandard", 50001: "WebP", 50002: "JPEG XL", 52546: "JPEG XL", 34887: "LERC",
        ]
        return names[scheme].map { "\($0) (\(scheme))" } ?? "\(scheme)"
    }
}

/// A TIFF structure's header and first directory (IFD0), classic or
/// BigTIFF, either byte order: what ``TIFFDirectory`` and a JPEG's EXIF
/// orientation (``JPEGMetadata``) read, bounds-checked at every step.
struct TIFFStructure {
    let bytes: SniffBytes
    let bigEndian: Bool
    /// BigTIFF: 8-byte counts and offsets, 20-byte entries.
    private(set) var isBigTIFF = false
    /// Where the first directory starts (its entry count).
    private(set) var firstDirectory = 0

    init?(_ bytes: SniffBytes) {
        guard bytes.count >= 8 else { return nil }
        switch (bytes[0], bytes[1]) {
        case (0x49, 0x49): bigEndian = false
        case (0x4D, 0x4D): bigEndian = true
        default: return nil
        }
        self.bytes = bytes
        let first: Int?
        switch uint(2, 2) {
        case 42?:
            first = uint(4, 4)
        case 43?:
            guard uint(4, 2) == 8, uint(6, 2) == 0 else { return nil }
            isBigTIFF = true
            first = uint(8, 8)
        default:
            return nil
        }
        guard let first, first >= 8 else { return nil }
        firstDirectory = first
    }

    var entrySize: Int { isBigTIFF ? 20 : 12 }
    /// The size of an entry's value field (a value that fits, or its offset).
    var valueSize: Int { isBigTIFF ? 8 : 4 }
    /// Where the first directory's entries start.
    var entries: Int { firstDirectory + (isBigTIFF ? 8 : 2) }
    /// The first directory's entry count, nil when out of the bytes.
    var entryCount: Int? { uint(firstDirectory, isBigTIFF ? 8 : 2) }

    /// Entry `index` of the first directory: its offset, tag, type and
    /// value count; nil when out of the bytes.
    func entry(_ index: Int) -> (offset: Int, tag: Int, type: Int, count: Int)? {
        let offset = entries + index * entrySize
        guard let tag = uint(offset, 2), let type = uint(offset + 2, 2), let count = uint(offset + 4, isBigTIFF ? 8 : 4) else {
            return nil
        }
        return (offset, tag, type, count)
    }

    /// Where the value field of the entry at `offset` is.
    func valueField(of offset: Int) -> Int { offset + 4 + (isBigTIFF ? 8 : 4) }

    /// The unsigned integer of `size` bytes at `offset`, in the file's byte order.
    func uint(_ offset: Int, _ size: Int) -> Int? {
        guard offset >= 0, size > 0, offset <= bytes.count - size else { return nil }
        // An 8-byte value past Int.max is no offset, count or size a file holds.
        if size == 8, bytes[offset + (bigEndian ? 0 : 7)] >= 0x80 { return nil }
        var value = 0
        for index in 0..<size {
            let byte = Int(bytes[offset + (bigEndian ? index : size - 1 - index)])
            value = value << 8 | byte
        }
        return value
    }
}
