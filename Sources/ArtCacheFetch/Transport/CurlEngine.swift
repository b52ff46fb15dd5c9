import ArtCacheCore
import CCurlShim
import Foundation

/// The state behind the transport. Every field but `inbox` is touched only by
/// the transport thread (`run()` and the libcurl callbacks it triggers);
/// other threads go through `inbox` (a lock) and `ccurl_multi_wakeup`, which
/// libcurl documents as thread-safe. That is why @unchecked Sendable is sound.
final class CurlEngine: @unchecked Sendable {
    typealias Continuation = CheckedContinuation<TransferResult, Error>

    struct Submission {
        let id: Int
        let request: TransferRequest
        var priority: ImagePriority
        /// Work behind an answer: has a reserved share of admissions (``CurlEngine/admit()``).
        let background: Bool
        let continuation: Continuation

        /// Served before `other`: higher priority, then submitted earlier.
        func precedes(_ other: Submission) -> Bool {
            priority != other.priority ? priority > other.priority : id < other.id
        }
    }

    struct Inbox {
        var submissions: [Submission] = []
        var cancellations: [Int] = []
        var priorities: [(id: Int, priority: ImagePriority)] = []
        var shuttingDown = false
        var lastID = 0
    }

    final class Active {
        let id: Int
        let host: String
        let url: String
        let started = ContinuousClock.now
        let continuation: Continuation
        let state: TransferState
        let transfer: OpaquePointer

        init(id: Int, host: String, url: String, continuation: Continuation, state: TransferState, transfer: OpaquePointer) {
            self.id = id
            self.host = host
            self.url = url
            self.continuation = continuation
            self.state = state
            self.transfer = transfer
        }
    }

    private let inbox = Locked(Inbox())
    /// Counts for metrics and tests, updated by the transport thread.
    let load = Watched((queued: 0, active: 0))
    /// The transfers under way as the transport thread last published them
    /// (at most every ``underWayEvery``: progress output, not accounting).
    let underWay = Locked<[TransferProgress]>([])
    static let underWayEvery: Duration = .milliseconds(250)
    private let multi: OpaquePointer
    private let maxTotal: Int
    private let maxPerHost: Int
    // Transport-thread only:
    /// Per host, in the order they will start (`Submission.precedes`).
    private var waiting: [String: [Submission]] = [:]
    private var active: [Int: Active] = [:]
    private var byTransfer: [OpaquePointer: Int] = [:]
    private var activePerHost: [String: Int] = [:]
    /// Continuations of finished transfers, resumed once `load` counts them
    /// out (a caller handed its result never reads itself as still active).
    private var finished: [() -> Void] = []
    /// Background transfers' share of the admissions (see ``admit()``).
    private var share = BackgroundShare()
    /// When ``underWay`` was last published.
    private var underWayPublished: ContinuousClock.Instant?

    init(multi: OpaquePointer, maxTotal: Int, maxPerHost: Int) {
        self.multi = multi
        self.maxTotal = maxTotal
        self.maxPerHost = maxPerHost
    }

    func nextID() -> Int { inbox.withLock { $0.lastID += 1; return $0.lastID } }

    /// Called from the submitting task. A cancellation is seen either here
    /// (the task's flag, read under the inbox lock) or by `cancel(id:)`, which
    /// takes the same lock and queues behind this submission: never lost.
    func submit(id: Int, request: TransferRequest, priority: ImagePriority, background: Bool = false,
                continuation: Continuation) {
        let refusal = inbox.withLock { box -> DownloadError? in
            if box.shuttingDown { return DownloadError(.cancelled, "downloader shut down") }
            if Task.isCancelled { return DownloadError(.cancelled, "\(request.url): cancelled") }
            box.submissions.append(Submission(id: id, request: request, priority: priority, background: background,
                                              continuation: continuation))
            return nil
        }
        if let refusal {
            continuation.resume(throwing: refusal)
            return
        }
        ccurl_multi_wakeup(multi)
    }

    func cancel(id: Int) {
        inbox.withLock { $0.cancellations.append(id) }
        ccurl_multi_wakeup(multi)
    }

    /// Called by a transfer's `PriorityHandle` observer, possibly while a
    /// coalescer holds its lock (lock order: coalescer → handle → this
    /// inbox, see `Coalescer.updatePriority`); takes only the inbox lock.
    func reprioritize(id: Int, to priority: ImagePriority) {
        inbox.withLock { $0.priorities.append((id, priority)) }
        ccurl_multi_wakeup(multi)
    }

    /// Idempotent. The multi handle stays alive until this engine is freed
    /// (after the transport thread has left `run()`), so a wakeup can never
    /// reach a destroyed handle.
    func shutdown() {
        let first = inbox.withLock { box -> Bool in
            defer { box.shuttingDown = true }
            return !box.shuttingDown
        }
        if first { ccurl_multi_wakeup(multi) }
    }

    deinit { ccurl_multi_destroy(multi) }

    /// The transport thread's loop.
    func run() {
        while true {
            let (submissions, cancellations, priorities, stopping) = inbox.withLock { box in
                defer { box.submissions = []; box.cancellations = []; box.priorities = [] }
                return (box.submissions, box.cancellations, box.priorities, box.shuttingDown)
            }
            for submission in submissions { enqueue(submission) }
            for (id, priority) in priorities { reprioritize(id: id, priority: priority) }
            for id in cancellations { abort(id: id, error: CancellationError()) }
            if stopping {
                for id in Array(active.keys) { abort(id: id, error: DownloadError(.cancelled, "downloader shut down")) }
                for (_, queue) in waiting {
                    for s in queue { finished.append { s.continuation.resume(throwing: DownloadError(.cancelled, "downloader shut down")) } }
                }
                waiting = [:]
                load.withLock { $0 = (queued: 0, active: 0) }
                underWay.withLock { $0 = [] }
                resumeFinished()
                return
            }
            admit()
            var running: Int32 = 0
            ccurl_multi_perform(multi, &running)
            collectFinished()
            admit()
            let counts = (queued: waiting.values.reduce(0) { $0 + $1.count }, active: active.count)
            load.withLock { $0 = counts }
            publishUnderWay()
            resumeFinished()
            ccurl_multi_poll(multi, active.isEmpty ? 1000 : 100)
        }
    }

    /// Queues a submission behind those that precede it on its host; past
    /// `[download] queue_per_host` waiting on that host it is refused at once
    /// (`queue_full`): the waiting line is bounded.
    private func enqueue(_ submission: Submission) {
        var queue = waiting[submission.request.host, default: []]
        let limit = submission.request.settings.queuePerHost
        if queue.count >= limit {
            submission.continuation.resume(throwing: DownloadError(
                .queueFull, "\(submission.request.url): \(limit) transfers already wait for \(submission.request.host) (download.queue_per_host)"))
            return
        }
        let index = queue.firstIndex { submission.precedes($0) } ?? queue.endIndex
        queue.insert(submission, at: index)
        waiting[submission.request.host] = queue
    }

    /// Moves a waiting submission to its new place (a started one keeps going).
    private func reprioritize(id: Int, priority: ImagePriority) {
        for (host, queue) in waiting {
            guard let index = queue.firstIndex(where: { $0.id == id }) else { continue }
            var submission = waiting[host]!.remove(at: index)
            submission.priority = priority
            enqueue(submission)
            return
        }
    }

    /// Starts waiting transfers while the total and per-host limits allow:
    /// each time the one that precedes all others among hosts with room —
    /// except that background work (a revalidation, a warm-up) has a
    /// reserved share (``BackgroundShare``): after `foregroundInARow`
    /// foreground admissions in a row while one waited, the oldest background
    /// transfer on a host with room goes next, whatever the foreground's priority.
    private func admit() {
        while active.count < maxTotal {
            var best: (host: String, index: Int, submission: Submission)?
            var oldestBackground: (host: String, index: Int, submission: Submission)?
            for (host, queue) in waiting where activePerHost[host, default: 0] < maxPerHost {
                if let head = queue.first, best.map({ head.precedes($0.submission) }) ?? true { best = (host, 0, head) }
                if let index = queue.firstIndex(where: \.background),
                   oldestBackground.map({ queue[index].id < $0.submission.id }) ?? true {
                    oldestBackground = (host, index, queue[index])
                }
            }
            guard var next = best else { return }
            if let reserved = oldestBackground, share.isBackgroundsTurn(true) { next = reserved }
            share.handedOver(background: next.submission.background, backgroundWaited: oldestBackground != nil)
            waiting[next.host]!.remove(at: next.index)
            if waiting[next.host]!.isEmpty { waiting[next.host] = nil }
            start(next.submission)
        }
    }

    private func start(_ submission: Submission) {
        let request = submission.request
        let state = TransferState(url: request.url, maxBody: request.settings.maxBodyBytes,
                                  policy: request.settings.addressPolicy, sources: request.settings.sourcePolicy,
                                  maxRedirects: request.settings.maxRedirects)
        let userdata = Unmanaged.passUnretained(state).toOpaque()
        let s = request.settings
        let extra = request.extraHeaders.isEmpty ? nil : request.extraHeaders.map { $0 + "\n" }.joined()
        let transfer: OpaquePointer? = request.url.withCString { url in
            s.userAgent.withCString { agent in
                withOptionalCString(request.ifNoneMatch) { etag in
                    withOptionalCString(request.ifModifiedSince) { modified in
                        withOptionalCString(request.accept) { accept in
                            withOptionalCString(extra) { extra in
                              withOptionalCString(request.method) { method in
                                withOptionalCString(request.awsSigV4) { sigv4 in
                                  withOptionalCString(request.credentials) { userpwd in
                                    withOptionalBytes(request.body) { body, bodyLength in
                                     withOptionalCString(request.resolve) { resolve in
                                var r = ccurl_request_t()
                                r.resolve = resolve
                                r.method = method
                                r.body = body
                                r.body_length = Int64(bodyLength)
                                r.aws_sigv4 = sigv4
                                r.userpwd = userpwd
                                r.url = url
                                r.user_agent = agent
                                r.if_none_match = etag
                                r.if_modified_since = modified
                                r.accept = accept
                                r.extra_headers = extra
                                r.connect_timeout_ms = Int(s.connectTimeout * 1000)
                                r.timeout_ms = Int(s.timeout * 1000)
                                r.low_speed_limit = Int(s.lowSpeedLimit)
                                r.low_speed_time_s = Int(s.lowSpeedTime.rounded(.up))
                                r.max_redirects = s.maxRedirects
                                r.allow_http = s.allowHTTP ? 1 : 0
                                r.max_body_bytes = s.maxBodyBytes
                                r.write_fn = transferWrite
                                r.header_fn = transferHeader
                                // The operator's own endpoint may be on loopback: no address check.
                                r.address_fn = request.trusted ? nil : transferAddress
                                r.userdata = userdata
                                return ccurl_transfer_create(&r)
                                     }
                                    }
                                  }
                                }
                              }
                            }
                        }
                    }
                }
            }
        }
        guard let transfer, ccurl_multi_add(multi, transfer) == 0 else {
            if let transfer { ccurl_transfer_destroy(transfer) }
            submission.continuation.resume(throwing: DownloadError(.network, "libcurl refused the request for \(request.url)"))
            return
        }
        active[submission.id] = Active(id: submission.id, host: request.host, url: request.url,
                                       continuation: submission.continuation,
                                       state: state, transfer: transfer)
        byTransfer[transfer] = submission.id
        activePerHost[request.host, default: 0] += 1
    }

    private func collectFinished() {
        var transfer: OpaquePointer?
        var code: Int32 = 0
        while ccurl_multi_next_done(multi, &transfer, &code) == 1 {
            guard let transfer, let id = byTransfer[transfer], let job = finish(id: id) else { continue }
            var info = ccurl_info_t()
            ccurl_transfer_info(transfer, &info)
            let detail = info.error.map { String(cString: $0) } ?? ""
            let result = TransferResult(
                curlCode: code,
                curlMessage: detail.isEmpty ? String(cString: ccurl_strerror(code)) : detail,
                status: info.status, headers: job.state.headers, body: job.state.body,
                effectiveURL: info.effective_url.map { String(cString: $0) } ?? "",
                httpVersion: info.http_version, redirects: info.redirect_count, tooLarge: job.state.tooLarge,
                blockedAddress: info.blocked_address != 0 ? job.state.blocked : nil,
                blockedSource: job.state.blockedSource, unfollowableRedirect: job.state.unfollowableRedirect,
                requestSent: info.request_sent != 0, osErrno: Int32(truncatingIfNeeded: info.os_errno))
            ccurl_transfer_destroy(transfer)
            finished.append { job.continuation.resume(returning: result) }
        }
    }

    /// Publishes the transfers under way and their bytes so far, at most
    /// every ``underWayEvery`` (at once when the last one ended).
    private func publishUnderWay() {
        let now = ContinuousClock.now
        if active.isEmpty {
            guard underWayPublished != nil else { return }
            underWayPublished = nil
        } else {
            if let last = underWayPublished, now - last < Self.underWayEvery { return }
            underWayPublished = now
        }
        let snapshot = active.values.map { TransferProgress(url: $0.url, started: $0.started, bytes: Int64($0.state.body.count)) }
        underWay.withLock { $0 = snapshot }
    }

    private func resumeFinished() {
        let done = finished
        finished = []
        for resume in done { resume() }
    }

    /// Removes a job from the active set (and from libcurl).
    private func finish(id: Int) -> Active? {
        guard let job = active.removeValue(forKey: id) else { return nil }
        byTransfer[job.transfer] = nil
        activePerHost[job.host, default: 1] -= 1
        ccurl_multi_remove(multi, job.transfer)
        return job
    }

    private func abort(id: Int, error: Error) {
        if let job = finish(id: id) {
            ccurl_transfer_destroy(job.transfer)
            finished.append { job.continuation.resume(throwing: error) }
            return
        }
        for (host, queue) in waiting {
            if let index = queue.firstIndex(where: { $0.id == id }) {
                let continuation = waiting[host]!.remove(at: index).continuation
                finished.append { continuation.resume(throwing: error) }
                if waiting[host]!.isEmpty { waiting[host] = nil }
                return
            }
        }
    }
}
