@_spi(Benchmarks) import ArtCacheCore
import CVipsShim
import Dispatch
import Foundation

private struct RenderCounters: Sendable {
    var started = 0
    var inProgress = 0
}

/// A rendered variant.
@_spi(Benchmarks) public struct RenderedImage: Sendable {
    @_spi(Benchmarks) public let data: Data
    @_spi(Benchmarks) public let width: Int
    @_spi(Benchmarks) public let height: Int
    @_spi(Benchmarks) public let format: VariantSpec.Format
    @_spi(Benchmarks) public let hasAlpha: Bool

    /// The media type of `data` (its format is never `.auto`).
    package var contentType: String {
        switch format {
        case .auto, .jpeg: "image/jpeg"
        case .webp: "image/webp"
        case .png: "image/png"
        case .avif: "image/avif"
        }
    }
}

/// Thumbnails with libvips, on a render pool of its own (never Swift's
/// cooperative threads): as many renders at once as configured (default one
/// per core), each with libvips concurrency 1, started by priority.
///
/// libvips starts once per process with fixed settings (`cvips_init`); which
/// loader may decode an input is decided per call from the sniffed format
/// and this renderer's settings (SVG and ImageMagick only when enabled here).
@_spi(Benchmarks) public final class Renderer: Sendable {
    @_spi(Benchmarks) public let settings: ThumbnailSettings
    private let counters = Locked(RenderCounters())
    let threads: WorkerThreads

    /// Cheap: libvips itself starts at the first render or header read.
    @_spi(Benchmarks) public init(settings: ThumbnailSettings) {
        self.settings = settings
        let count = settings.concurrency > 0 ? settings.concurrency : ProcessInfo.processInfo.activeProcessorCount
        threads = WorkerThreads(count: max(1, count), name: "artcache.render")
    }

    deinit { threads.stop() }

    /// Starts libvips (once per process, fixed settings).
    static func start() throws(RenderError) {
        guard cvips_init("artcache") == 0 else {
            throw RenderError(.unsupported, "libvips failed to start")
        }
    }

    package var libvipsVersion: String { String(cString: cvips_version()) }

    /// The libvips loaders that may decode `format` here (a `CVIPS_LOADER_*`
    /// mask; 0: refused before libvips sees the bytes). ImageMagick decodes
    /// BMP and ICO only, and only when enabled; nothing else ever falls back to it.
    package func loaders(for format: SniffedFormat) -> Int32 {
        let bits: Int = switch format {
        case .jpeg: CVIPS_LOADER_JPEG
        case .png, .apng: CVIPS_LOADER_PNG
        case .gif: CVIPS_LOADER_GIF
        case .webp: CVIPS_LOADER_WEBP
        case .tiff: CVIPS_LOADER_TIFF
        case .heic, .heif, .avif: CVIPS_LOADER_HEIF
        case .svg: settings.allowSVG ? CVIPS_LOADER_SVG : 0
        case .bmp, .ico: settings.allowMagick ? CVIPS_LOADER_MAGICK : 0
        case .jxl, .psd, .pdf, .html, .json, .xml, .text, .empty, .unknown: 0
        }
        return Int32(bits)
    }

    static let coreLoaders = CVIPS_LOADER_JPEG | CVIPS_LOADER_PNG | CVIPS_LOADER_GIF | CVIPS_LOADER_WEBP
        | CVIPS_LOADER_TIFF | CVIPS_LOADER_HEIF

    /// Formats handed to libvips at all under these settings.
    package var renderableFormats: Set<SniffedFormat> {
        Set(SniffedFormat.allCases.filter { loaders(for: $0) != 0 })
    }

    /// Renders `spec` from encoded bytes. Limits are checked from the header
    /// first. Throws `RenderError`, or `CancellationError` when the calling
    /// task is cancelled before the render starts.
    @_spi(Benchmarks) public func render(_ data: Data, spec: VariantSpec, priority: ImagePriority = .normal) async throws -> RenderedImage {
        try await render(data, spec: spec, priority: PriorityHandle(priority))
    }

    package func render(_ data: Data, spec: VariantSpec, priority: PriorityHandle) async throws -> RenderedImage {
        // Refused from the sniffed format before taking a place in the render queue.
        let format = Sniffer.sniff(data).format
        _ = try allowedLoaders(for: format)
        return try await onRenderThread(priority: priority) { try self.renderBlocking(data, format: format, spec: spec) }
    }

    /// Renders started and in progress since this renderer was made, and
    /// renders waiting for a render thread.
    package var activity: (started: Int, inProgress: Int, waiting: Int) {
        let c = counters.withLock { $0 }
        return (c.started, c.inProgress, threads.load.waiting)
    }

    /// Runs `body` on the render pool, started by priority.
    package func onRenderThread<T: Sendable>(priority: PriorityHandle, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await threads.run(priority: priority) { [counters] in
            counters.withLock { $0.started += 1; $0.inProgress += 1 }
            defer { counters.withLock { $0.inProgress -= 1 } }
            return try body()
        }
    }

    /// The synchronous render (call from a thread you own): open the header,
    /// check the limits, then decode and encode.
    package func renderBlocking(_ data: Data, format sniffedFormat: SniffedFormat? = nil, spec: VariantSpec) throws(RenderError) -> RenderedImage {
        var options = try renderOptions(spec)
        let sniffed = sniffedFormat ?? Sniffer.sniff(data).format
        // JPEG and PNG: one frame, and a size readable from the header without
        // libvips, so the limits are checked here and libvips opens the bytes
        // once (no copy, no second header read).
        if let (width, height) = Sniffer.extent(data, format: sniffed) {
            let limits = settings.renderLimits
            guard width >= 1, height >= 1, width * height <= limits.maxSourcePixels else {
                throw tooManyPixels(width, height, sniffed)
            }
            try Self.start()
            return try VipsImage.render(data, format: sniffed, loaders: allowedLoaders(for: sniffed), options: &options)
        }
        return try openChecked(data, format: sniffed).render(&options)
    }

    /// Several variants of one image from one decode, at the scale the
    /// largest needs (shrink on load); the smaller ones are resized from it.
    /// One variant: the same as ``render(_:spec:priority:)``.
    @_spi(Benchmarks) public func render(_ data: Data, specs: [VariantSpec], priority: ImagePriority = .normal) async throws -> [RenderedImage] {
        try await render(data, specs: specs, priority: PriorityHandle(priority))
    }

    package func render(_ data: Data, specs: [VariantSpec], priority: PriorityHandle) async throws -> [RenderedImage] {
        guard specs.count > 1 else {
            var one: [RenderedImage] = []
            for spec in specs { one.append(try await render(data, spec: spec, priority: priority)) }
            return one
        }
        let format = Sniffer.sniff(data).format
        _ = try allowedLoaders(for: format)
        return try await onRenderThread(priority: priority) { () throws(RenderError) -> [RenderedImage] in
            let options = try specs.map { spec throws(RenderError) in try self.renderOptions(spec) }
            return try self.openChecked(data, format: format).render(options)
        }
    }

    /// The output's options, refused when larger than `max_output`.
    private func renderOptions(_ spec: VariantSpec) throws(RenderError) -> cvips_render_options_t {
        let limits = settings.renderLimits
        guard spec.width <= limits.maxOutput, spec.height <= limits.maxOutput else {
            throw RenderError(.tooLarge, "output \(spec.width)x\(spec.height) is larger than max_output \(limits.maxOutput)")
        }
        var options = cvips_render_options_t()
        options.width = Int32(spec.width)
        options.height = Int32(spec.height)
        options.fit = switch spec.fit {
        case .contain: Int32(CVIPS_FIT_CONTAIN)
        case .cover: Int32(CVIPS_FIT_COVER)
        case .smart: Int32(CVIPS_FIT_SMART)
        }
        options.format = Int32(Self.code(of: spec.format))
        options.quality = Int32(spec.quality)
        let bg = spec.background + [255, 255, 255]
        options.background = (bg[0], bg[1], bg[2])
        options.timeout = settings.renderTimeout
        return options
    }

    /// The refusal of a source whose header declares too many pixels.
    private func tooManyPixels(_ width: Int, _ height: Int, _ format: SniffedFormat) -> RenderError {
        RenderError(.tooLarge, "\(format.displayName): too large: \(width)x\(height) = \(width * height) pixels"
                    + " (limit \(settings.renderLimits.maxSourcePixels))")
    }

    /// Opens the bytes (header only) and checks the source limits before any
    /// pixel is decoded.
    private func openChecked(_ data: Data, format sniffedFormat: SniffedFormat?) throws(RenderError) -> VipsImage {
        let limits = settings.renderLimits
        let sniffed = sniffedFormat ?? Sniffer.sniff(data).format
        if [.heic, .heif, .avif].contains(sniffed), let (width, height) = Sniffer.heifExtent(data),
           width * height > limits.maxSourcePixels {
            throw tooManyPixels(width, height, sniffed)
        }
        let image = try open(data, format: sniffed)
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
        return image
    }

    /// Opens encoded bytes with the loaders this renderer allows for their
    /// sniffed format.
    func open(_ data: Data, format: SniffedFormat? = nil) throws(RenderError) -> VipsImage {
        try Self.start()
        let sniffed = format ?? Sniffer.sniff(data).format
        return try VipsImage(data, format: sniffed, loaders: try allowedLoaders(for: sniffed))
    }

    /// The loader mask for `format`, or the typed refusal when none may decode it.
    private func allowedLoaders(for format: SniffedFormat) throws(RenderError) -> Int32 {
        let allowed = loaders(for: format)
        guard allowed != 0 else {
            let why = format.isImage ? "rendering \(format.displayName) is not enabled" : "not an image we render"
            throw RenderError(.unsupported, "\(format.displayName): \(why)")
        }
        return allowed
    }

    /// The header of encoded bytes, read without decoding pixels (blocking).
    package func header(of data: Data) throws(RenderError) -> ImageHeader {
        try open(data).header
    }

    /// A solid `rgb` image of `width` x `height` in `format` (auto: JPEG).
    package func solidImage(width: Int, height: Int, rgb: [Double], format: VariantSpec.Format, quality: Int) throws(RenderError) -> RenderedImage {
        try Self.start()
        var output: UnsafeMutableRawPointer?
        var length = 0
        let code = Self.code(of: format == .auto ? .jpeg : format)
        let status = (rgb + [200, 200, 200]).prefix(3).map { $0 }.withUnsafeBufferPointer {
            cvips_solid_image(Int32(width), Int32(height), $0.baseAddress, Int32(code), Int32(quality), &output, &length)
        }
        guard status == Int32(CVIPS_OK), let output else {
            throw RenderError(.encode, "cannot encode a \(width)x\(height) \(format.rawValue) placeholder")
        }
        defer { cvips_free(output) }
        return RenderedImage(data: Data(bytes: output, count: length), width: width, height: height,
                             format: format == .auto ? .jpeg : format, hasAlpha: false)
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

    /// One PNG tiling `images` (nil = blank cell) in order, `columns` per row.
    package func contactSheet(_ images: [Data?], cell: Int = 100, columns: Int = 8) async throws -> Data {
        try Self.start()
        // Cells go through libvips' own loader probing: only the formats of
        // the always-on loaders (never SVG or ImageMagick) get that far.
        let images = images.map { cell in
            cell.flatMap { loaders(for: Sniffer.sniff($0).format) & Int32(Self.coreLoaders) != 0 ? $0 : nil }
        }
        return try await onRenderThread(priority: PriorityHandle(.normal)) { () throws(RenderError) -> Data in
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
                throw RenderError(.encode, "contact sheet failed")
            }
            defer { cvips_free(output) }
            return Data(bytes: output, count: length)
        }
    }
}
