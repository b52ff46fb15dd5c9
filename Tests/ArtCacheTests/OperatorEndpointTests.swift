import ArtCacheCore
import Foundation
import Testing
@testable import ArtCacheFetch

/// Issue 50: the ring's front door and the tier's object store are checked
/// by one rule (they differed: `/` alone was an empty tier endpoint, i.e.
/// off; it is refused now, as it was for the front).
@Suite("Operator endpoints")
struct OperatorEndpointTests {
    @Test func oneRuleForTheFrontAndTheTier() {
        for allowingPath in [true, false] {
            #expect(OperatorEndpoint.url("", allowingPath: allowingPath) == "", "none configured")
            #expect(OperatorEndpoint.url("  ", allowingPath: allowingPath) == "")
            #expect(OperatorEndpoint.url(" http://rgw.internal:7480/ ", allowingPath: allowingPath) == "http://rgw.internal:7480")
            #expect(OperatorEndpoint.url("HTTPS://[::1]:8443//", allowingPath: allowingPath) == "HTTPS://[::1]:8443")
            for bad in ["/", "//", "rgw.internal", "ftp://rgw", "http://rgw/?a=1", "http://rgw/#x", "http://user@rgw",
                        "http://user:secret@rgw", "http:///x", "http://"] {
                #expect(OperatorEndpoint.url(bad, allowingPath: allowingPath) == nil, "\(bad), path allowed: \(allowingPath)")
            }
        }
        // A front may sit under a path prefix; the object store is addressed at its root.
        #expect(OperatorEndpoint.url("https://ring.example/images/", allowingPath: true) == "https://ring.example/images")
        #expect(OperatorEndpoint.url("https://rgw.example/bucket", allowingPath: false) == nil)
    }
}
