@testable import ArtCacheCore
@testable import ArtCacheFetch
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheStore
import Foundation
import Testing

/// Where origins may be fetched from: the classifier as a pure function
/// (no traffic), and connect-time refusal proven against loopback only.
@Suite("Address policy", .timeLimit(.minutes(3)))
struct AddressPolicyTests {
    @Test(arguments: [
        ("0.0.0.0", AddressClass.unspecified), ("127.0.0.1", .loopback), ("127.255.0.9", .loopback),
        ("10.1.2.3", .private), ("172.16.0.1", .private), ("172.31.255.255", .private), ("192.168.1.1", .private),
        ("100.64.0.1", .sharedCGNAT), ("100.127.255.254", .sharedCGNAT), ("169.254.169.254", .linkLocal),
        ("224.0.0.1", .multicast), ("239.255.255.250", .multicast), ("255.255.255.255", .broadcast),
        ("240.0.0.1", .reserved), ("192.0.0.8", .reserved), ("192.0.2.1", .documentation), ("198.18.0.1", .benchmarking),
        ("::", .unspecified), ("::1", .loopback), ("fe80::1", .linkLocal), ("fec0::1", .siteLocal),
        ("fc00::1", .uniqueLocal), ("fd12:3456::1", .uniqueLocal), ("ff02::1", .multicast), ("2001:db8::1", .documentation),
        // IPv6 forms that carry an IPv4 address are judged by it.
        ("::ffff:127.0.0.1", .loopback), ("::ffff:10.0.0.1", .private), ("::ffff:169.254.169.254", .linkLocal),
        ("::127.0.0.1", .loopback), ("64:ff9b::a9fe:a9fe", .linkLocal), ("2002:c0a8:0101::1", .private),
        ("::ffff:100.64.0.1", .sharedCGNAT),
        // Public.
        ("8.8.8.8", .public), ("172.32.0.1", .public), ("100.128.0.1", .public), ("2606:4700::1111", .public),
        ("::ffff:8.8.8.8", .public),
    ])
    func classifies(_ text: String, _ expected: AddressClass) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressClass.of(address) == expected, "\(text)")
        #expect(AddressPolicy().allows(address) == (expected == .public))
    }

    /// Local-use NAT64 (RFC 8215) is refused as a whole, whatever IPv4
    /// address a /96 reading would find in it (8.8.8.8 here), while the
    /// well-known prefix is still judged by the IPv4 address it carries.
    @Test(arguments: ["64:ff9b:1::a00:1", "64:ff9b:1::808:808", "64:ff9b:1:8:800:8:800::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff"])
    func localUseNAT64IsNotPublic(_ text: String) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressClass.of(address) == .localNAT64)
        #expect(address.embeddedIPv4 == nil)
        #expect(!AddressPolicy().allows(address))
        #expect(!AddressPolicy(allowedNetworks: [try #require(IPNetwork("8.8.8.0/24"))]).allows(address))
        #expect(AddressPolicy(allowedNetworks: [try #require(IPNetwork("64:ff9b:1::/48"))]).allows(address), "opted in")
    }

    @Test func nat64PrefixesAroundTheLocalUseOne() throws {
        #expect(AddressClass.of(try #require(IPAddress("64:ff9b::808:808"))) == .public)
        #expect(AddressClass.of(try #require(IPAddress("64:ff9b::a00:1"))) == .private)
        #expect(AddressClass.of(try #require(IPAddress("64:ff9b:2::808:808"))) == .reserved)  // outside the /48: ::/8
        #expect(AddressClass.of(try #require(IPAddress("64:ff9b:0:ffff::1"))) == .reserved)
    }

    @Test func networksAndOptIns() throws {
        let loopback = try #require(IPNetwork("127.0.0.0/8"))
        #expect(loopback.contains(try #require(IPAddress("127.9.9.9"))))
        #expect(!loopback.contains(try #require(IPAddress("128.0.0.1"))))
        #expect(!loopback.contains(try #require(IPAddress("::1"))))
        #expect(try #require(IPNetwork("fd00::/8")).contains(try #require(IPAddress("fd12::1"))))
        #expect(IPNetwork("10.0.0.0/33") == nil && IPNetwork("nonsense") == nil && IPNetwork("1.2.3/8") == nil)
        let policy = AddressPolicy(allowedNetworks: [try #require(IPNetwork("127.0.0.1/32"))])
        #expect(policy.allows(try #require(IPAddress("127.0.0.1"))))
        #expect(policy.allows(try #require(IPAddress("::ffff:127.0.0.1"))))  // the mapped form of an allowed address
        #expect(!policy.allows(try #require(IPAddress("127.0.0.2"))))
        #expect(!policy.allows(try #require(IPAddress("10.0.0.1"))))
        // In cache.conf / the environment: a bad range names the key.
        let error = #expect(throws: ConfigError.self) {
            try Configuration.read(path: nil, environment: ["ARTCACHE_DOWNLOAD_ALLOWED_NETWORKS": "127.0.0.1/32,10.0.0.0/99"])
        }
        #expect(error?.key == "download.allowed_networks")
        #expect(try Configuration.read(path: nil, environment: [:]).download.allowedNetworks.isEmpty)
    }

    @Test func credentialsInURLsAreRefused() {
        let error = #expect(throws: ArtCacheError.self) { try NormalizedURL("https://user:secret@example.com/a.jpg") }
        #expect(error?.code == .invalidURL)
        #expect(error?.message.contains("secret") == false)
    }

    /// With loopback not allowed, every spelling of a loopback source is
    /// refused at connect time: the origin never sees a request.
    @Test func loopbackIsRefusedInEverySpelling() async throws {
        let h = try await LoopbackHarness { $0.download.allowedNetworks = []; $0.download.retries = 0 }
        h.origin.register("a.jpg", .init(body: try Fixtures.image(suffix: ".jpg"), contentType: "image/jpeg"))
        let port = h.origin.port
        for host in ["127.0.0.1", "2130706433", "0x7f.1", "[::ffff:127.0.0.1]", "localhost"] {
            let error = await #expect(throws: ArtCacheError.self) {
                try await h.pipeline.image(ImageRequest(url: "http://\(host):\(port)/img/a.jpg"))
            }
            #expect(error?.code == .network(.blockedAddress), "\(host): \(String(describing: error))")
        }
        #expect(h.origin.requestLog.isEmpty)
        try await h.pipeline.close()
    }

    /// A redirect hop is checked like the first connection: the allowed
    /// origin answers, the hop to another (not allowed) address is refused.
    @Test func redirectHopsAreChecked() async throws {
        let h = try await LoopbackHarness { configuration in
            configuration.download.allowedNetworks = [IPNetwork("127.0.0.1/32")!]
            configuration.download.retries = 0
        }
        h.origin.register("a.jpg", .init(body: try Fixtures.image(suffix: ".jpg"), contentType: "image/jpeg"))
        let port = h.origin.port
        #expect(try await h.pipeline.image(ImageRequest(url: h.url("/img/a.jpg"))).data.count > 0)
        for target in ["127.0.0.2:\(port)", "2130706434:\(port)", "[::ffff:127.0.0.2]:\(port)", "[::1]:\(port)"] {
            let error = await #expect(throws: ArtCacheError.self) {
                let encoded = target.replacingOccurrences(of: "[", with: "%5B").replacingOccurrences(of: "]", with: "%5D")
                return try await h.pipeline.image(ImageRequest(url: h.url("/elsewhere/\(encoded)/a.jpg"), options: .reloadIgnoringCache))
            }
            // Refused before connecting (an attempt would have been `connect`: nothing listens there).
            #expect(error?.code == .network(.blockedAddress), "\(target): \(String(describing: error))")
        }
        #expect(h.origin.requestLog.filter { $0.hasPrefix("/img/") }.count == 1)
        try await h.pipeline.close()
    }
}
