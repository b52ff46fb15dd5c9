import ArtCacheCore
import ArtCacheFetch
import ArtCachePipeline
import Foundation

/// A live progress bar on a terminal, plain lines otherwise (on stderr).
/// When no item has finished for ``stallAfter``, it says which downloads
/// it waits on (`waiting on 1: host/path (12 s, 230 B)`), again every
/// ``stallAfter`` while that lasts.
final class ProgressReporter: Sendable {
    private struct State {
        var percent = -1
        var drawn = Date.distantPast
        var done = 0
        /// When an item last finished (the start before the first).
        var lastFinished = ContinuousClock.now
        var lastWaitingLine: ContinuousClock.Instant?
    }

    /// No item finished for this long: the output names the downloads under way.
    static let stallAfter: Duration = .seconds(5)
    /// Downloads named in a waiting line; more are counted.
    static let namedAtMost = 3

    private let isTerminal = isatty(STDERR_FILENO) == 1
    private let quiet: Bool
    private let state = Locked(State())

    init(quiet: Bool) { self.quiet = quiet }

    func update(_ p: PrefetchProgress) {
        let now = Date()
        state.withLock { state in
            if p.done > state.done {
                state.done = p.done
                state.lastFinished = .now
            }
        }
        guard !quiet || isTerminal, p.total > 0 else { return }
        let percent = p.done * 100 / p.total
        let rate = p.elapsed > 0 ? Double(p.done) / p.elapsed : 0
        if isTerminal {
            let due = state.withLock { state -> Bool in
                guard p.done == p.total || now.timeIntervalSince(state.drawn) > 0.1 else { return false }
                state.drawn = now
                return true
            }
            guard due else { return }
            let width = 30
            let filled = p.done * width / p.total
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            let line = "\r[\(bar)] \(p.done)/\(p.total)  \(Units.formatSize(p.bytes))  \(String(format: "%.0f", rate))/s  \(p.failed) failed\u{1B}[K"
            FileHandle.standardError.write(Data(line.utf8))
        } else {
            // One line per 10%, and the last one.
            let due = state.withLock { state -> Bool in
                guard percent / 10 > state.percent / 10 || p.done == p.total else { return false }
                state.percent = percent
                return true
            }
            guard due, !quiet else { return }
            FileHandle.standardError.write(Data("progress \(p.done)/\(p.total) bytes=\(p.bytes) failed=\(p.failed) rate=\(String(format: "%.0f", rate))/s\n".utf8))
        }
    }

    /// Looks once a second, until cancelled, whether the prefetch stalls
    /// (see ``stalled(_:now:)``); `underWay` reads the downloads under way.
    func watch(_ underWay: @Sendable () -> [TransferProgress]) async {
        while true {
            do {
                try await Task.sleep(for: .seconds(1))
            } catch {
                return
            }
            stalled(underWay())
        }
    }

    /// Writes the waiting line when no item has finished for ``stallAfter``
    /// and none was written for as long.
    func stalled(_ underWay: [TransferProgress], now: ContinuousClock.Instant = .now) {
        guard !quiet || isTerminal, !underWay.isEmpty else { return }
        let due = state.withLock { state -> Bool in
            guard now - state.lastFinished >= Self.stallAfter,
                  state.lastWaitingLine.map({ now - $0 >= Self.stallAfter }) ?? true else { return false }
            state.lastWaitingLine = now
            return true
        }
        guard due else { return }
        let text = Self.waitingLine(underWay, now: now)
        FileHandle.standardError.write(Data((isTerminal ? "\r\(text)\u{1B}[K" : "\(text)\n").utf8))
    }

    /// `waiting on N: host/path (12 s, 230 B), ...`: the oldest first, at
    /// most ``namedAtMost`` named; no scheme, no query (it may carry a signature).
    static func waitingLine(_ underWay: [TransferProgress], now: ContinuousClock.Instant) -> String {
        let oldest = underWay.sorted { $0.started < $1.started }
        var named = oldest.prefix(namedAtMost).map { transfer in
            var place = Substring(transfer.url)
            if let scheme = place.range(of: "://") { place = place[scheme.upperBound...] }
            if let query = place.firstIndex(where: { $0 == "?" || $0 == "#" }) { place = place[..<query] }
            return "\(place) (\((now - transfer.started).components.seconds) s, \(Units.formatSize(transfer.bytes)))"
        }
        if oldest.count > namedAtMost { named.append("\(oldest.count - namedAtMost) more") }
        return "waiting on \(underWay.count): " + named.joined(separator: ", ")
    }

    func finish() {
        if isTerminal && !quiet { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
