import ArtCacheCore
import CVipsShim
import Dispatch
import Foundation

private struct RenderCounters: Sendable {
    var started = 0
    var inProgress = 0
    /// Renders the TurboJPEG fast path made (the rest were libvips').
    var fast = 0
    /// Placeholder decodes (``Renderer/intrinsics(of:priority:)``): not renders.
    var placeholders = 0
}

/// Thumbnails with libvips, on a render pool of its own (never Swift's
/// cooperative threads): as many renders at once as configured (default one
/// per core), each with libvips concurrency 1, started by priority.
///
/// libvips starts once per process with fixed settings (`cvips_init`); which
/// loader may decode an input is decided per call from the sniffed format
/// and this renderer's settings (SVG and ImageMagick only when enabled here).
package final class Renderer: Sendable {
    package let settings: ThumbnailSettings
    private let counters = Locked(RenderCounters())
    let threads: WorkerThreads
    /// The thread renders behind the answers run on (format upgrades).
    let behindThreads: WorkerThreads
    /// The quality and effort each output is encoded with (both paths).
    /// `.cold` for answers, `.behind` for format upgrades behind them (``render(_:spec:priority:tier:)``).
    package let encoderSetting: @Sendable (VariantSpec, VariantSpec.Format, QualityTable.Tier) -> EncoderSetting

    /// Cheap: libvips itself starts at the first render or header read.
    package convenience init(settings: ThumbnailSettings) {
        self.init(settings: settings, encoderSetting: RenderPlan.calibratedSetting)
    }

    /// `encoderSetting`: the quality and effort of an output (a spec in the
    /// format it is written as, never `.auto`), e.g. from a calibrated table;
    /// by default the spec's quality with libvips' default efforts.
    package convenience init(settings: ThumbnailSettings,
                             encoderSetting: @escaping @Sendable (VariantSpec, VariantSpec.Format) -> EncoderSetting) {
        self.init(settings: settings, encoderSetting: { spec, format, _ in encoderSetting(spec, format) })
    }

    /// `encoderSetting` per tier: `.cold` for answers, `.behind` for format upgrades.
    package init(settings: ThumbnailSettings,
                 encoderSetting: @escaping @Sendable (VariantSpec, VariantSpec.Format, QualityTable.Tier) -> EncoderSetting) {
        self.settings = settings
        self.encoderSetting = encoderSetting
        let count = settings.concurrency > 0 ? settings.concurrency : ProcessInfo.processInfo.activeProcessorCount
        threads = WorkerThreads(count: max(1, count), name: "artcache.render")
        behindThreads = WorkerThreads(count: 1, name: "artcache.behind", niceness: Self.behindNiceness)
    }

    deinit { [threads, behindThreads].forEach { $0.stop() } }

    /// Added to the nice value of the thread rendering behind the answers (format upgrades): at the
    /// process's priority they cut the memory hits beside them to 46k from 61k req/s (issue 51 §3).
    static let behindNiceness: Int32 = 10

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
        case .jxl, .psd, .jp2, .tga, .qoi, .pdf, .html, .json, .xml, .text, .empty, .unknown: 0
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
    package func render(_ data: Data, spec: VariantSpec, priority: ImagePriority = .normal) async throws -> RenderedImage {
        try await render(data, spec: spec, priority: PriorityHandle(priority))
    }

    package func render(_ data: Data, spec: VariantSpec, priority: PriorityHandle) async throws -> RenderedImage {
        try await render(data, specs: [spec], priority: priority)[0]
    }

    /// ``render(_:spec:priority:)`` encoded with the `tier`'s setting: a format upgrade behind
    /// an answer takes `.behind` (fewer bytes, more CPU; on its own niced thread, ``behindNiceness``).
    package func render(_ data: Data, spec: VariantSpec, priority: PriorityHandle, tier: QualityTable.Tier) async throws -> RenderedImage {
        let known = try admit(data, specs: [spec])
        return try await run(on: tier == .behind ? behindThreads : threads, priority: priority) {
            try self.renderBlocking(data, format: known, specs: [spec], placeholder: nil, tier: tier)[0]
        }
    }

    /// Several variants of one image from one decode, at the scale the
    /// largest needs (shrink on load); the smaller ones are resized from it.
    package func render(_ data: Data, specs: [VariantSpec], priority: ImagePriority = .normal) async throws -> [RenderedImage] {
        try await render(data, specs: specs, priority: PriorityHandle(priority))
    }

    package func render(_ data: Data, specs: [VariantSpec], priority: PriorityHandle) async throws -> [RenderedImage] {
        guard !specs.isEmpty else { return [] }
        let known = try admit(data, specs: specs)
        return try await onRenderThread(priority: priority) { try self.renderBlocking(data, format: known, specs: specs) }
    }

    /// Refuses a render from the sniffed format before it takes a place in
    /// the render queue; a gzip body (an svgz is inflated whole to be sure of
    /// it) is sniffed on the render thread instead, off Swift's cooperative
    /// pool (nil).
    func admit(_ data: Data, specs: [VariantSpec]) throws(RenderError) -> SniffedFormat? {
        var format: SniffedFormat?
        if !Self.isGzip(data) {
            format = Sniffer.sniff(data).format
            _ = try allowedLoaders(for: format!)
            try Self.refuseUndecodable(data, format: format!)
        }
        for spec in specs { try checkOutput(spec) }
        return format
    }

    /// Renders started and in progress since this renderer was made, and
    /// renders waiting for a render thread; jobs the render threads took and
    /// the wake-ups of a sleeping thread that took them (batch size = ratio).
    package var activity: (started: Int, inProgress: Int, waiting: Int, jobs: Int, wakeups: Int) {
        let c = counters.withLock { $0 }
        let handoffs = threads.handoffCounts
        return (c.started, c.inProgress, threads.load.waiting, handoffs.jobs, handoffs.wakeups)
    }

    /// Renders made by the TurboJPEG fast path since this renderer was made.
    package var fastRenders: Int { counters.withLock { $0.fast } }
    /// Placeholders computed on the render threads since this renderer was made.
    package var placeholdersComputed: Int { counters.withLock { $0.placeholders } }
    func countPlaceholder() { counters.withLock { $0.placeholders += 1 } }

    /// Runs `body` on the render pool, started by priority, counted as a placeholder decode.
    func onRenderThread<T: Sendable>(placeholderPriority priority: PriorityHandle, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await threads.run(priority: priority) { [counters] in
            counters.withLock { $0.placeholders += 1 }
            return try body()
        }
    }

    /// Runs `body` on the render pool, started by priority.
    package func onRenderThread<T: Sendable>(priority: PriorityHandle, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await run(on: threads, priority: priority, body)
    }

    private func run<T: Sendable>(on pool: WorkerThreads, priority: PriorityHandle, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.run(priority: priority) { [counters] in
            counters.withLock { $0.started += 1; $0.inProgress += 1 }
            defer { counters.withLock { $0.inProgress -= 1 } }
            return try body()
        }
    }

    /// The one render (call it on a thread you own, never Swift's
    /// cooperative pool): sniff, check the limits from the header, then the
    /// steps of the plan, all outputs from one decode, under one deadline
    /// (`[thumbnails] render_timeout`).
    package func renderBlocking(_ data: Data, format sniffedFormat: SniffedFormat? = nil,
                                specs: [VariantSpec]) throws(RenderError) -> [RenderedImage] {
        try renderBlocking(data, format: sniffedFormat, specs: specs, placeholder: nil)
    }

    /// ``renderBlocking(_:format:specs:)``; `placeholder` is given the
    /// placeholder's pixels when the fast path's decode had them.
    func renderBlocking(_ data: Data, format sniffedFormat: SniffedFormat?, specs: [VariantSpec],
                        placeholder: ((PlaceholderPixels) -> Void)?, tier: QualityTable.Tier = .cold) throws(RenderError) -> [RenderedImage] {
        let encoding: (VariantSpec, VariantSpec.Format) -> EncoderSetting = { [encoderSetting, settings] in
            var setting = encoderSetting($0, $1, tier)
            setting.progressiveFrom = settings.progressiveFrom
            return setting
        }
        guard let first = specs.first else { return [] }
        let sniffed = sniffedFormat ?? Sniffer.sniff(data).format
        let loaders = try allowedLoaders(for: sniffed)
        try Self.refuseUndecodable(data, format: sniffed)
        for spec in specs { try checkOutput(spec) }
        let deadline = ContinuousClock.now + .seconds(settings.renderTimeout)
        if settings.fastJPEG, JPEGFastPath.handles(sniffed, specs: specs),
           let fast = JPEGFastPath.plan(data, specs: specs, maxSourcePixels: settings.renderLimits.maxSourcePixels),
           let rendered = try fast.render(data, deadline: deadline, encoding: encoding, placeholder: placeholder) {
            counters.withLock { $0.fast += 1 }
            return rendered
        }
        try Self.start()
        if sniffed == .gif || sniffed == .webp, specs.contains(where: { $0.format == .webp }) {
            return try renderMaybeAnimated(data, format: sniffed, loaders: loaders, specs: specs, encoding: encoding)
        }
        return try renderStills(data, format: sniffed, loaders: loaders, specs: specs, encoding: encoding)
    }

    /// The libvips path: one decode of the first frame (of an animation too),
    /// every output from it. `opened`: the bytes already opened and checked
    /// (``openChecked(_:format:)``), not read again.
    func renderStills(_ data: Data, format sniffed: SniffedFormat, loaders: Int32, specs: [VariantSpec], opened: VipsImage? = nil,
                      encoding: (VariantSpec, VariantSpec.Format) -> EncoderSetting) throws(RenderError) -> [RenderedImage] {
        guard let first = specs.first else { return [] }
        let render = VipsRender(timeout: settings.renderTimeout, format: sniffed)
        // One contain or cover output of a JPEG or PNG (one frame, a size
        // readable without libvips): the limits are checked from the header
        // bytes, and libvips reads the bytes in place, once (no copy, no
        // second header read).
        if specs.count == 1, first.fit != .smart, let (width, height) = Sniffer.extent(data, format: sniffed) {
            guard width >= 1, height >= 1, width * height <= settings.renderLimits.maxSourcePixels else {
                throw tooManyPixels(width, height, sniffed)
            }
            let result: Result<RenderedImage, RenderError> = data.withUnsafeBytes { bytes in
                do throws(RenderError) {
                    try render.thumbnail(bytes, loaders: loaders, width: first.width, height: first.height,
                                         centreCrop: first.fit == .cover)
                    return .success(try finish(render, first, encoding))
                } catch {
                    return .failure(error)
                }
            }
            return [try result.get()]
        }
        let image = if let opened { opened } else { try openChecked(data, format: sniffed) }
        if specs.count == 1, first.fit != .smart {
            // libvips' thumbnail does the fit (and the centre crop) itself.
            try render.thumbnail(image, width: first.width, height: first.height, centreCrop: first.fit == .cover)
            return [try finish(render, first, encoding)]
        }
        // One decode into the box the most demanding output needs, computed
        // once under the deadline; each output is resized and cropped from
        // those pixels (an attention crop too: it runs on the materialized
        // image, so the kill flag covered the decode it looks at).
        let header = image.header
        let upright = RenderPlan.upright(width: header.width, height: header.height, orientation: header.orientation)
        let box = RenderPlan.decodeBox(width: upright.width, height: upright.height, specs: specs)
        try render.thumbnail(image, width: box.width, height: box.height, centreCrop: false)
        try render.materialize()
        var outputs: [RenderedImage] = []
        for spec in specs {
            let output = specs.count == 1 ? render : try render.branch()
            let decoded = output.info
            let scale = RenderPlan.scale(width: decoded.width, height: decoded.height, into: spec)
            if scale < 1 { try output.resize(scale) }
            let resized = output.info
            if let crop = RenderPlan.crop(width: resized.width, height: resized.height, spec: spec) {
                try output.crop(width: crop.width, height: crop.height, crop.crop)
            }
            outputs.append(try finish(output, spec, encoding))
        }
        return outputs
    }

    /// The end of every output: sRGB, opaque alpha dropped (an alpha band
    /// that is 255 everywhere is not alpha: an opaque GIF, an RGBA PNG),
    /// then the output format (auto: PNG with alpha, else JPEG), alpha
    /// flattened when the format has none, encode (no ICC profile kept).
    func finish(_ render: VipsRender, _ spec: VariantSpec,
                        _ encoding: (VariantSpec, VariantSpec.Format) -> EncoderSetting) throws(RenderError) -> RenderedImage {
        try render.toSRGB()
        var hasAlpha = render.info.hasAlpha
        if hasAlpha, try render.dropOpaqueAlpha() { hasAlpha = false }
        let format = RenderPlan.outputFormat(spec.format, hasAlpha: hasAlpha)
        let flatten = RenderPlan.flattens(format, hasAlpha: hasAlpha)
        if flatten { try render.flatten(onto: spec.background) }
        let size = render.info
        let data = try render.save(format, encoding(spec, format))
        var image = RenderedImage(data: data, width: size.width, height: size.height, format: format, hasAlpha: hasAlpha && !flatten)
        image.frames = size.frames
        return image
    }

    /// An output larger than `max_output` is refused.
    private func checkOutput(_ spec: VariantSpec) throws(RenderError) {
        let limits = settings.renderLimits
        guard spec.width <= limits.maxOutput, spec.height <= limits.maxOutput else {
            throw RenderError(.tooLarge, "output \(spec.width)x\(spec.height) is larger than max_output \(limits.maxOutput)")
        }
    }

    static func isGzip(_ data: Data) -> Bool {
        data.count >= 2 && data[data.startIndex] == 0x1F && data[data.startIndex + 1] == 0x8B
    }

    /// The refusal of a source whose header declares too many pixels.
    private func tooManyPixels(_ width: Int, _ height: Int, _ format: SniffedFormat) -> RenderError {
        RenderError(.tooLarge, "\(format.displayName): too large: \(width)x\(height) = \(width * height) pixels"
                    + " (limit \(settings.renderLimits.maxSourcePixels))")
    }

    /// Opens the bytes (header only) and checks the source limits before any
    /// pixel is decoded.
    func openChecked(_ data: Data, format sniffedFormat: SniffedFormat?) throws(RenderError) -> VipsImage {
        let limits = settings.renderLimits
        let sniffed = sniffedFormat ?? Sniffer.sniff(data).format
        if [.heic, .heif, .avif].contains(sniffed), let (width, height) = Sniffer.heifExtent(data),
           width * height > limits.maxSourcePixels {
            throw tooManyPixels(width, height, sniffed)
        }
        let image = try open(data, format: sniffed)
        let header = image.header
        let format = image.format.displayName
        // One frame is decoded for a still: an animation's frames are
        // `max_frames` and `max_animation_pixels`' (its first frame past them).
        if header.width < 1 || header.height < 1 || header.width * header.height > limits.maxSourcePixels {
            throw RenderError(.tooLarge, "\(format): too large: \(header.width)x\(header.height)"
                              + " = \(header.width * header.height) pixels (limit \(limits.maxSourcePixels))")
        }
        return image
    }

    /// Opens encoded bytes with the loaders this renderer allows for their
    /// sniffed format.
    func open(_ data: Data, format: SniffedFormat? = nil) throws(RenderError) -> VipsImage {
        try Self.start()
        let sniffed = format ?? Sniffer.sniff(data).format
        let loaders = try allowedLoaders(for: sniffed)
        try Self.refuseUndecodable(data, format: sniffed)
        return try VipsImage(data, format: sniffed, loaders: loaders)
    }

    /// A valid image in a variant libvips has no reader for (a TIFF: 12-bit
    /// samples, tiled separate planes, a compression its libtiff lacks) is
    /// refused as `unsupported` before libvips, which would call it corrupt.
    static func refuseUndecodable(_ data: Data, format: SniffedFormat) throws(RenderError) {
        guard format == .tiff, let directory = TIFFDirectory(data),
              let why = directory.undecodable(codecConfigured: tiffCodecConfigured)
        else { return }
        throw RenderError(.unsupported, "TIFF: \(why)")
    }

    /// Whether libvips' libtiff decodes TIFF compression `scheme`.
    static func tiffCodecConfigured(_ scheme: Int) -> Bool {
        cvips_tiff_codec_configured(Int32(clamping: scheme)) != 0
    }

    /// The loader mask for `format`, or the typed refusal when none may decode it.
    func allowedLoaders(for format: SniffedFormat) throws(RenderError) -> Int32 {
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
}
