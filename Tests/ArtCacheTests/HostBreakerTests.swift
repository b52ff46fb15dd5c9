import Foundation
import Testing
@testable import ArtCacheFetch

/// Issue 50: one breaker type (``HostBreaker``), one half-open rule, in
/// both its uses: the downloader's hosts here, the second tier's endpoint
/// in `Tier2BreakerTests`. Open, after its cool-down it lets exactly one
/// request through as the probe and refuses the others as if open; the
/// probe's failure opens it again for a whole cool-down, its answer closes it.
@Suite("Host breaker: one probe")
struct HostBreakerTests {
    @Test func aHostsProbeIsOneAndItsFailureOpensTheBreakerAgain() {
        let breaker = HostBreaker(threshold: 2, coolDown: 60)
        let connect = DownloadError(.connect, "refused")
        let start = Date()
        func at(_ seconds: TimeInterval) -> Date { start.addingTimeInterval(seconds) }
        breaker.record(connect, host: "a.test", now: start)
        breaker.record(connect, host: "a.test", now: start)
        #expect(breaker.refuses("a.test", now: at(59)), "open for the cool-down")
        #expect(!breaker.refuses("a.test", now: at(60)), "the one probe")
        #expect(breaker.refuses("a.test", now: at(60)) && breaker.refuses("a.test", now: at(119)),
                "the others are refused while the probe runs")
        breaker.record(connect, host: "a.test", now: at(61))  // the probe failed
        #expect(breaker.offlineHosts["a.test"] != nil)
        #expect(breaker.refuses("a.test", now: at(120)), "open again, a whole cool-down from the failed probe")
        #expect(!breaker.refuses("a.test", now: at(121)), "the next probe")
        #expect(breaker.refuses("a.test", now: at(121)))
        breaker.recordAnswer(host: "a.test")  // it answered
        #expect(!breaker.refuses("a.test", now: at(122)) && !breaker.refuses("a.test", now: at(122)), "closed: everyone goes")
        #expect(breaker.offlineHosts.isEmpty)
    }

    /// A probe that gets an HTTP answer, even an error, closes it (the
    /// host is there); so does one that connected and then timed out
    /// (issue 58: it used to leave the host refused for another whole
    /// cool-down, although a timeout after connecting means the host is
    /// there, only slow).
    @Test func aHostsProbeThatAnswersClosesIt() {
        let breaker = HostBreaker(threshold: 1, coolDown: 30)
        let start = Date()
        breaker.record(DownloadError(.dns, "no such host"), host: "b.test", now: start)
        #expect(!breaker.refuses("b.test", now: start.addingTimeInterval(30)), "the probe")
        breaker.record(DownloadError(.httpStatus, "HTTP status 503", status: 503), host: "b.test", now: start.addingTimeInterval(31))
        #expect(!breaker.refuses("b.test", now: start.addingTimeInterval(31)), "an answer, even a 503, closes it")
        #expect(breaker.offlineHosts.isEmpty)
    }

    /// Issue 58: every way a probe that reached the host can fail closes
    /// the breaker — a timeout after connecting (the request went out), a
    /// TLS failure (the host took the connection), a body cut short — the
    /// next caller goes at once, not a cool-down later.
    @Test(arguments: [
        DownloadError(.timeout, "timed out"), DownloadError(.tls, "TLS error"),
        DownloadError(.truncated, "body ended short"), DownloadError(.network, "connection reset"),
    ])
    func aProbeThatReachedTheHostClosesIt(_ failure: DownloadError) {
        let breaker = HostBreaker(threshold: 1, coolDown: 30)
        let start = Date()
        breaker.record(DownloadError(.connect, "refused"), host: "c.test", now: start)
        #expect(breaker.refuses("c.test", now: start.addingTimeInterval(29)))
        #expect(!breaker.refuses("c.test", now: start.addingTimeInterval(30)), "the probe")
        breaker.record(failure, host: "c.test", now: start.addingTimeInterval(31))
        #expect(!breaker.refuses("c.test", now: start.addingTimeInterval(32)), "\(failure.code): the host is there")
        #expect(breaker.offlineHosts.isEmpty, "\(failure.code)")
    }

    /// A probe that timed out before connecting is a host still not there:
    /// open again for a whole cool-down.
    @Test func aProbeThatTimesOutConnectingOpensItAgain() {
        let breaker = HostBreaker(threshold: 1, coolDown: 30)
        let start = Date()
        breaker.record(DownloadError(.connect, "refused"), host: "d.test", now: start)
        #expect(!breaker.refuses("d.test", now: start.addingTimeInterval(30)), "the probe")
        var connecting = DownloadError(.timeout, "timed out connecting")
        connecting.timedOutConnecting = true
        breaker.record(connecting, host: "d.test", now: start.addingTimeInterval(32))
        #expect(breaker.refuses("d.test", now: start.addingTimeInterval(61)), "open again from the failed probe")
        #expect(!breaker.refuses("d.test", now: start.addingTimeInterval(62)), "the next probe")
    }

    /// Issue 58: a probe cancelled by its caller shows nothing about the
    /// host: its slot is given back and the next caller is the probe at
    /// once. Only the probe's own pass gives it back: a pass of the closed
    /// breaker, or of a probe already replaced, changes nothing.
    @Test func aCancelledProbeGivesItsSlotBack() throws {
        let breaker = HostBreaker(threshold: 1, coolDown: 30)
        let start = Date()
        func at(_ seconds: TimeInterval) -> Date { start.addingTimeInterval(seconds) }
        let closed = try #require(breaker.admit("e.test", now: start))
        #expect(closed == .closed)
        breaker.record(DownloadError(.connect, "refused"), host: "e.test", now: start)
        breaker.record(DownloadError(.cancelled, "cancelled"), host: "e.test", pass: closed, now: at(1))
        #expect(breaker.admit("e.test", now: at(2)) == nil, "a closed pass gives nothing back: still open")
        let probe = try #require(breaker.admit("e.test", now: at(30)))
        #expect(probe.probe != nil)
        #expect(breaker.admit("e.test", now: at(31)) == nil, "one probe at a time")
        breaker.record(DownloadError(.cancelled, "cancelled"), host: "e.test", pass: probe, now: at(32))
        #expect(breaker.offlineHosts["e.test"] != nil, "nothing learnt: still offline")
        let next = try #require(breaker.admit("e.test", now: at(32)), "the next caller probes at once")
        #expect(next.probe != nil && next != probe)
        breaker.release(probe, host: "e.test", now: at(33))
        #expect(breaker.admit("e.test", now: at(33)) == nil, "the old pass does not free the new probe's slot")
        breaker.record(DownloadError(.blockedAddress, "refused"), host: "e.test", pass: next, now: at(34))
        #expect(breaker.admit("e.test", now: at(34)) != nil, "refused before connecting: nothing learnt either")
    }
}
