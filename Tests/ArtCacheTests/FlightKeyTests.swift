@testable import ArtCacheCore
@testable import ArtCachePipeline
import Testing

/// Coalescing keys are typed (issue 37: they were strings put together):
/// what must share a flight has equal keys, what must not has different ones.
@Suite("Flight keys")
struct FlightKeyTests {
    @Test func onlyTheSameLoadSharesAFlight() throws {
        let key = try NormalizedURL("https://h/a.jpg").key, other = try NormalizedURL("https://h/b.jpg").key
        let load = OriginalFlight(key: key, purpose: .load(mode: .normal, staleOK: true, rendition: nil))
        #expect(load == OriginalFlight(key: key, purpose: .load(mode: .normal, staleOK: true, rendition: nil)))
        let apart: [OriginalFlight] = [
            OriginalFlight(key: other, purpose: .load(mode: .normal, staleOK: true, rendition: nil)),
            OriginalFlight(key: key, purpose: .load(mode: .reload, staleOK: true, rendition: nil)),
            OriginalFlight(key: key, purpose: .load(mode: .cacheOnly, staleOK: true, rendition: nil)),
            OriginalFlight(key: key, purpose: .load(mode: .normal, staleOK: false, rendition: nil)),
            OriginalFlight(key: key, purpose: .load(mode: .normal, staleOK: true, rendition: "https://h/a.jpg?s=460")),
            OriginalFlight(key: key, purpose: .revalidation),
        ]
        #expect(Set(apart + [load]).count == apart.count + 1)
        #expect(VariantFlight(key: key, mode: .normal) == VariantFlight(key: key, mode: .normal))
        #expect(VariantFlight(key: key, mode: .normal) != VariantFlight(key: key, mode: .reload))
    }
}
