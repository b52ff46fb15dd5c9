import Testing
@testable import ArtCacheCore

/// The one bounded memo of the hot paths (issue 37: written out six times
/// before): never more than its capacity, starts over when full, claims once.
@Suite("Bounded memo")
struct BoundedMemoTests {
    @Test func itKeepsAtMostItsCapacityAndStartsOverWhenFull() {
        let memo = BoundedMemo<Int, String>(capacity: 3)
        for key in 0..<3 { memo.store("\(key)", for: key) }
        #expect(memo.count == 3 && memo[0] == "0" && memo[2] == "2")
        memo.store("zero", for: 0)  // a kept key is replaced, nothing forgotten
        #expect(memo.count == 3 && memo[0] == "zero")
        memo.store("3", for: 3)     // full: everything else is forgotten
        #expect(memo.count == 1 && memo[3] == "3" && memo[0] == nil)
    }

    @Test func aValueIsMadeOnceWhileKept() {
        let memo = BoundedMemo<String, Int>(capacity: 8)
        var made = 0
        for _ in 0..<5 { #expect(memo.value(for: "k") { made += 1; return 42 } == 42) }
        #expect(made == 1)
        memo.remove("k")
        #expect(memo.value(for: "k") { made += 1; return 43 } == 43 && made == 2)
    }

    @Test func aKeyIsClaimedOnce() {
        let memo = BoundedMemo<String, Bool>(capacity: 2)
        #expect(memo.claim("a", true) && !memo.claim("a", true))
        #expect(memo.claim("b", true))
        #expect(memo.claim("c", true) && memo.count == 1, "full: started over")
        #expect(memo.claim("a", true), "forgotten with the rest")
    }
}
