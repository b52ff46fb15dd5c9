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
    /// host is there); a timeout after connecting neither closes nor opens
    /// it again: the next probe comes a cool-down later.
    @Test func aHostsProbeThatAnswersClosesIt() {
        let breaker = HostBreaker(threshold: 1, coolDown: 30)
        let start = Date()
        breaker.record(DownloadError(.dns, "no such host"), host: "b.test", now: start)
        #expect(!breaker.refuses("b.test", now: start.addingTimeInterval(30)), "the probe")
        breaker.record(DownloadError(.timeout, "slow"), host: "b.test", now: start.addingTimeInterval(31))
        #expect(breaker.refuses("b.test", now: start.addingTimeInterval(59)), "a slow probe does not close it")
        #expect(!breaker.refuses("b.test", now: start.addingTimeInterval(60)), "the next probe")
        breaker.recordAnswer(host: "b.test")
        #expect(!breaker.refuses("b.test", now: start.addingTimeInterval(60)))
    }
}
