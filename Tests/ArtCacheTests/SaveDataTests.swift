import ArtCacheFixtures
@testable import ArtCacheCore
import ArtCacheOrigin
@testable import ArtCachePipeline
@testable import ArtCacheRender
@testable import ArtCacheServer
import Foundation
import HTTPTypes
import Hummingbird
import Testing

/// Issue 52 §2: a browser in data-saver mode (`Save-Data: on`) gets the same
/// format at the same size in fewer bytes (`[thumbnails] save_data_quality`),
/// the answer says `Vary: Accept, Save-Data`, and every tier keeps the two
/// answers apart. An explicit format and quality in the URL are answered as
/// they say.
@Suite("Service: Save-Data", .timeLimit(.minutes(3)))
struct SaveDataTests {
    static let saveData = HTTPField.Name("Save-Data")!

    struct Answer: Equatable {
        var type: String?
        var vary: String?
        var source: String?
        var width = 0, height = 0
        var body: Data
    }

    static func answer(_ response: TestResponse) throws -> Answer {
        let body = Data(buffer: response.body)
        let header = try #require(Fixtures.header(body), "an image: \(response.status)")
        return Answer(type: response.headers[.contentType], vary: response.headers[.vary],
                      source: response.headers[.artcacheSource], width: header.width, height: header.height, body: body)
    }

    /// A photograph-like source: a colour zone plate, where every quality shows.
    static func register(_ s: ServiceHarness, _ name: String) throws {
        s.origin.register(name, .init(body: try SyntheticImage.zonePlateJPEG(width: 600, height: 600, quality: 90),
                                      contentType: "image/jpeg"))
    }

    @Test(arguments: [FormatPolicyTests.chrome, "image/jpeg"])
    func sameFormatSameSizeFewerBytes(accept: String) async throws {
        let s = try await ServiceHarness()
        try Self.register(s, "a.jpg")
        let path = try s.path("/img/a.jpg", "300x300,fit=cover")
        try await s.app().test(.router) { client in
            func get(_ saveData: String?) async throws -> Answer {
                var headers: HTTPFields = [.accept: accept]
                if let saveData { headers[Self.saveData] = saveData }
                return try await client.execute(uri: path, method: .get, headers: headers) { try Self.answer($0) }
            }
            let normal = try await get(nil)
            let saver = try await get("on")
            #expect(saver.type == normal.type, "the same format for the same Accept")
            #expect((saver.width, saver.height) == (normal.width, normal.height) && normal.width == 300)
            #expect(saver.body.count < normal.body.count * 8 / 10, "\(saver.body.count) against \(normal.body.count) B")
            #expect(normal.vary == "Accept, Save-Data" && saver.vary == "Accept, Save-Data")
            // Chrome's answers may be upgraded behind them: once that has ended,
            // each is answered from memory, still apart (the tiers key them by quality).
            await s.pipeline.waitForUpgrades()
            let normalFinal = try await get(nil), saverFinal = try await get("On ; something")
            #expect(saverFinal.body.count < normalFinal.body.count, "\(saverFinal.body.count) against \(normalFinal.body.count) B")
            let normalAgain = try await get(nil), saverAgain = try await get("on")
            #expect(normalAgain.source == "memory" && saverAgain.source == "memory")
            #expect(normalAgain.body == normalFinal.body && saverAgain.body == saverFinal.body)
            // `Save-Data: off` (or anything but `on`) is the normal answer.
            #expect(try await get("off").body == normalFinal.body)
        }
        #expect(s.origin.requestCount("/img/a.jpg") == 1, "one original for both qualities")
        try await s.close()
    }

    /// The URL that names its format is not negotiated: no `Vary`, the same
    /// bytes with or without `Save-Data`. A negotiated URL that asks for less
    /// than `save_data_quality` keeps its own quality.
    @Test func explicitURLsAreAnsweredAsTheySay() async throws {
        let s = try await ServiceHarness()
        try Self.register(s, "b.jpg")
        let explicit = try s.path("/img/b.jpg", "300x300,fit=cover,f=jpeg,q=80")
        let low = try s.path("/img/b.jpg", "300x300,fit=cover,q=30")
        try await s.app().test(.router) { client in
            for path in [explicit, low] {
                let normal = try await client.execute(uri: path, method: .get, headers: [.accept: "image/jpeg"]) { try Self.answer($0) }
                let saver = try await client.execute(uri: path, method: .get, headers: [.accept: "image/jpeg", Self.saveData: "on"]) {
                    try Self.answer($0)
                }
                #expect(saver.body == normal.body, "\(path)")
                #expect(normal.vary == (path == explicit ? nil : "Accept, Save-Data"))
            }
        }
        try await s.close()
    }

    /// The connection's own hit path (``RawHitHandler``, keep-alive `GET`s)
    /// reads `Save-Data` too: warm hits of both answers stay apart.
    @Test func memoryHitsInTheChannelKeepThemApart() async throws {
        let s = try await ServiceHarness(live: true)
        try Self.register(s, "c.jpg")
        let path = try s.path("/img/c.jpg", "300x300,fit=cover")
        try await s.app().test(.live) { live in try await PatientClient.with(port: live.port!) { client in
            var bodies: [String: ByteBuffer] = [:]
            for round in 0..<3 {
                for saveData in ["", "on"] {
                    var headers: HTTPFields = [.accept: "image/jpeg"]
                    if !saveData.isEmpty { headers[Self.saveData] = saveData }
                    let response = try await client.execute(uri: path, method: .get, headers: headers)
                    #expect(response.status == .ok)
                    if round == 0 { bodies[saveData] = response.body } else {
                        #expect(response.headers[.artcacheSource] == "memory")
                        #expect(response.body == bodies[saveData], "round \(round), Save-Data \(saveData)")
                    }
                }
            }
            #expect(bodies[""] != bodies["on"])
            #expect(s.service.channelHits.load(ordering: .relaxed) == 4, "the warm rounds were the channel's")
        } }
        try await s.close()
    }

    /// The header's grammar: `on` first, any case, parameters after `;`.
    @Test func savesDataKnownAnswers() {
        for yes in ["on", "ON", " on ", "on;", "on; foo=bar", "\ton"] { #expect(Negotiation.savesData(yes), "\(yes)") }
        for no in [nil, "", "off", "onn", "o n", "1", "yes", ";on"] { #expect(!Negotiation.savesData(no), "\(no ?? "nil")") }
    }
}
