import CVipsShim
import Dispatch
import Foundation
import Synchronization

/// A rendered variant.
public struct RenderedImage: Sendable {
    public let data: Data
    public let width: Int
    public let height: Int
    public let format: VariantSpec.Format
    public let hasAlpha: Bool
}

/// Thumbnails with libvips, on a render pool of its own (never Swift's
/// cooperative threads): as many renders at once as configured (default one
/// per core), each with libvips concurrency 1.
public final class Renderer: Sendable {
    public let settings: ThumbnailSettings
    private let permits: AsyncPermits
    private let queue = DispatchQueue(label: "artcache.render", qos: .userInitiated, attributes: .concurrent)

    public init(settings: ThumbnailSettings) throws(RenderError) {
        self.settings = settings
        // Process-wide, once: liborc off, cache off, concurrency 1, loaders allow-listed.
        guard cvips_init_with("artcache", settings.allowSVG ? 1 : 0, settings.allowMagick ? 1 : 0) == 0 else {
            throw RenderError(.unsupported, "libvips failed to start: \(Renderer.takeError())")
        }
        let count = settings.concurrency > 0 ? settings.concurrency : ProcessInfo.processInfo.activeProcessorCount
        permits = AsyncPermits(count: max(1, count))
    }

    public var libvipsVersion: String { String(cString: cvips_version()) }

    /// Formats handed to libvips at all. Anything else is refused from our own
    /// sniffing, before libvips looks at it (libvips 8.14's loader probing can
    /// spin forever on a truncated gzip stream, for one).
    public var renderableFormats: Set<SniffedFormat> {
        var formats: Set<SniffedFormat> = [.jpeg, .png, .apng, .gif, .webp, .tiff, .heic, .heif, .avif]
        if settings.allowSVG { formats.insert(.svg) }
        if settings.allowMagick { formats.formUnion([.bmp, .ico]) }
        return formats
    }

    /// Renders `spec` from encoded bytes. Limits are checked from the header first.
    public func render(_ data: Data, spec: VariantSpec) async throws -> RenderedImage {
        let sniffed = Sniffer.sniff(data)
        guard renderableFormats.contains(sniffed.format) else {
            let why = sniffed.format.isImage ? "rendering \(sniffed.format.displayName) is not enabled" : "not an image we render"
            throw RenderError(.unsupported, "\(sniffed.format.displayName): \(why)")
        }
        try await permits.acquire()
        defer { permits.release() }
        let limits = settings.renderLimits
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try Renderer.renderBlocking(data, spec: spec, limits: limits) })
            }
        }
    }

    /// The synchronous render (call from a thread you own): open the header,
    /// check the limits, then decode and encode.
    public static func renderBlocking(_ data: Data, spec: VariantSpec, limits: RenderLimits) throws(RenderError) -> RenderedImage {
        guard spec.width <= limits.maxOutput, spec.height <= limits.maxOutput else {
            throw RenderError(.tooLarge, "output \(spec.width)x\(spec.height) is larger than max_output \(limits.maxOutput)")
        }
        let image = try VipsImage(data)
        let header = image.header
        let format = image.format.displayName
        if header.frames > limits.maxFrames {
            throw RenderError(.tooLarge, "\(format): too large: \(header.frames) frames (limit \(limits.maxFrames))")
        }
        if header.width < 1 || header.height < 1 || header.pixels > limits.maxSourcePixels {
            throw RenderError(.tooLarge, "\(format): too large: \(header.width)x\(header.height)"
                              + (header.frames > 1 ? " x \(header.frames) frames" : "")
                              + " = \(header.pixels) pixels (limit \(limits.maxSourcePixels))")
        }
        var options = cvips_render_options_t()
        options.width = Int32(spec.width)
        options.height = Int32(spec.height)
        options.fit = switch spec.fit {
        case .contain: Int32(CVIPS_FIT_CONTAIN)
        case .cover: Int32(CVIPS_FIT_COVER)
        case .smart: Int32(CVIPS_FIT_SMART)
        }
        options.format = Int32(code(of: spec.format))
        options.quality = Int32(spec.quality)
        let bg = spec.background + [255, 255, 255]
        options.background = (bg[0], bg[1], bg[2])
        return try image.render(&options)
    }

    /// The header of encoded bytes, read without decoding pixels.
    public static func header(of data: Data) throws(RenderError) -> ImageHeader {
        guard cvips_init("artcache") == 0 else { throw RenderError(.unsupported, "libvips failed to start") }
        return try VipsImage(data).header
    }

    private static func code(of format: VariantSpec.Format) -> Int {
        switch format {
        case .auto: CVIPS_FORMAT_AUTO
        case .jpeg: CVIPS_FORMAT_JPEG
        case .webp: CVIPS_FORMAT_WEBP
        case .png: CVIPS_FORMAT_PNG
        case .avif: CVIPS_FORMAT_AVIF
        }
    }

    static func takeError() -> String {
        guard let pointer = cvips_error_take() else { return "" }
        defer { free(pointer) }
        return String(cString: pointer).trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "\n", with: "; ")
    }

    /// One PNG tiling `images` (nil = blank cell) in order, `columns` per row.
    public func contactSheet(_ images: [Data?], cell: Int = 100, columns: Int = 8) async throws -> Data {
        try await permits.acquire()
        defer { permits.release() }
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { () throws(RenderError) -> Data in
                    var output: UnsafeMutableRawPointer?
                    var length = 0
                    let pointers = images.map { $0.map { data -> UnsafeMutableRawPointer in
                        let copy = UnsafeMutableRawPointer.allocate(byteCount: max(1, data.count), alignment: 1)
                        data.copyBytes(to: copy.assumingMemoryBound(to: UInt8.self), count: data.count)
                        return copy
                    } }
                    defer { pointers.forEach { $0?.deallocate() } }
                    let lengths = images.map { $0?.count ?? 0 }
                    var constPointers = pointers.map { $0.map { UnsafeRawPointer($0) } }
                    let status = constPointers.withUnsafeMutableBufferPointer { buffers in
                        lengths.withUnsafeBufferPointer { lengths in
                            cvips_contact_sheet(buffers.baseAddress, lengths.baseAddress, Int32(images.count), Int32(cell),
                                                Int32(max(1, columns)), &output, &length)
                        }
                    }
                    guard status == 0, let output else {
                        throw RenderError(.encode, "contact sheet failed: \(Renderer.takeError())")
                    }
                    defer { cvips_free(output) }
                    return Data(bytes: output, count: length)
                })
            }
        }
    }
}

/// A counting semaphore for async code: waiting suspends, never blocks a thread.
final class AsyncPermits: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(count: Int) { state = Mutex(State(available: count)) }

    func acquire() async throws {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { s -> Bool in
                if s.available > 0 {
                    s.available -= 1
                    return true
                }
                s.waiters.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
        if Task.isCancelled {
            release()
            throw CancellationError()
        }
    }

    func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.available += 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}

extension Renderer {
    /// A generated gradient image encoded with a libvips suffix (".jpg[Q=85]",
    /// ".webp", ".png"...): fixtures for benchmarks and the demo.
    @_spi(Benchmarks) public static func syntheticImage(width: Int, height: Int, bands: Int = 3, suffix: String) -> Data? {
        guard cvips_init("artcache") == 0 else { return nil }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard cvips_test_image(Int32(width), Int32(height), Int32(bands), suffix, &buffer, &length) == 0, let buffer else {
            _ = takeError()
            return nil
        }
        defer { cvips_free(buffer) }
        return Data(bytes: buffer, count: length)
    }
}
