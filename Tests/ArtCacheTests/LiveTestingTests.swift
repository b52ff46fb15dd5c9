import Testing

/// The suite's own HTTP client (Support/LiveTesting.swift) keeps its
/// deadline: a server that accepts and never answers fails the request,
/// typed, instead of holding the test until its time limit.
@Suite("Test client", .timeLimit(.minutes(1)))
struct LiveTestingTests {
    @Test func aSilentServerIsCutAtTheClientsDeadline() async throws {
        let silent = try SilentListener()
        defer { silent.close() }
        var client = TestClient(port: silent.port)
        client.timeout = .milliseconds(300)
        await #expect {
            _ = try await client.execute(uri: "/", method: .get)
        } throws: { error in
            if case TestClientError.timeout = error { return true }
            return false
        }
    }
}
