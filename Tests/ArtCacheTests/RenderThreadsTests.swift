@testable import ArtCacheCore
@testable import ArtCacheRender
import Foundation
import Testing

/// Renders behind the answers (format upgrades) run on a thread of their
/// own at a lower CPU priority: memory hits beside them go first (issue 51 §3).
@Suite("Render threads")
struct RenderThreadsTests {
    @Test func aRenderBehindTheAnswersRunsOnItsNicedThreadAndAnswersRenderAtTheProcessPriority() async throws {
        let renderer = Renderer(settings: Fixtures.thumbnails { _ in })
        let jpeg = try Fixtures.image(width: 64, height: 48, suffix: ".jpg")
        let spec = VariantSpec(width: 32, height: 32, fit: .cover, format: .webp)
        let behind = Locked<[Int32]>([]), cold = Locked<[Int32]>([])
        @Sendable func niceness() -> Int32 {
            errno = 0
            return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)  // the calling thread's (Linux)
        }
        let rendered = try await renderer.render(jpeg, spec: spec, priority: PriorityHandle(.veryLow), tier: .behind)
        #expect(rendered.width == 32 && rendered.height == 32)
        _ = try await renderer.behindThreads.run(priority: PriorityHandle(.veryLow)) { behind.withLock { $0.append(niceness()) } }
        _ = try await renderer.onRenderThread(priority: PriorityHandle(.normal)) { cold.withLock { $0.append(niceness()) } }
        let process = niceness()
        #expect(behind.withLock { $0 } == [min(19, process + Renderer.behindNiceness)])
        #expect(cold.withLock { $0 } == [process])
    }
}
