import Testing
@testable import ArtCacheCore

/// Background work's reserved share of a pool's hand-offs, as the render
/// threads and the downloader's admissions use it.
@Suite("Background share of hand-offs")
struct BackgroundShareTests {
    /// A pool of one job stream: `waiting` background jobs and an endless
    /// foreground stream; returns who was handed over, in order.
    static func handOffs(_ count: Int, backgroundJobs: Int) -> [String] {
        var share = BackgroundShare()
        var left = backgroundJobs
        var order: [String] = []
        for _ in 0..<count {
            let waits = left > 0
            if share.isBackgroundsTurn(waits) {
                left -= 1
                order.append("b")
                share.handedOver(background: true, backgroundWaited: true)
            } else {
                order.append("f")
                share.handedOver(background: false, backgroundWaited: waits)
            }
        }
        return order
    }

    @Test func whileBothWaitBackgroundGetsEveryFourthHandOff() {
        #expect(BackgroundShare.foregroundInARow == 3)
        #expect(Self.handOffs(12, backgroundJobs: 10) == Array(repeating: ["f", "f", "f", "b"], count: 3).flatMap { $0 })
    }

    @Test func foregroundHandedOverWhileNoBackgroundWaitsDoesNotCount() {
        var share = BackgroundShare()
        for _ in 0..<10 { share.handedOver(background: false, backgroundWaited: false) }
        #expect(!share.isBackgroundsTurn(true), "nothing waited: no debt")
        #expect(share == BackgroundShare())
    }

    @Test func aBackgroundJobPickedByPriorityStartsTheCountOver() {
        var share = BackgroundShare()
        share.handedOver(background: false, backgroundWaited: true)
        share.handedOver(background: false, backgroundWaited: true)
        share.handedOver(background: true, backgroundWaited: true)  // it was the highest priority anyway
        share.handedOver(background: false, backgroundWaited: true)
        share.handedOver(background: false, backgroundWaited: true)
        #expect(!share.isBackgroundsTurn(true))
        share.handedOver(background: false, backgroundWaited: true)
        #expect(share.isBackgroundsTurn(true))
        #expect(!share.isBackgroundsTurn(false), "its turn needs a background job waiting")
    }
}
