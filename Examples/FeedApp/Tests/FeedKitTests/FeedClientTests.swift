import FeedKit
import Foundation
import NetsimTesting
import Testing

/// The app's client through netsim: a bundled incident scenario, and a hand-written fault.
@Suite("FeedClient under netsim", .serialized)
struct FeedClientTests {
    /// netsim's lock-screen scenario (this example lives in the netsim repository; a package of
    /// your own keeps its scenario files in its own tree).
    static let lockscreen = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("../../../../Scenarios/lockscreen.scn").standardized.path

    /// The scenario's requests, sent with the app's client.
    struct Adapter: NetsimClient {
        let client: FeedClient

        func perform(_ request: NetsimRequest) async throws -> NetsimResponse {
            let answer = try await client.send(
                method: request.method, url: request.url, headers: request.headers.map { ($0.name, $0.value) }, body: request.body)
            return NetsimResponse(status: answer.status, headers: answer.headers.map { HTTPHeader($0.0, $0.1) }, body: answer.body)
        }

        func shutdown() async { await client.shutdown() }
    }

    @Test func survivesTheLockScreen() async throws {
        let result = try await Netsim.run(scenario: Self.lockscreen, name: "FeedClient") { config in
            Adapter(client: FeedClient(timeout: config.timeout ?? .seconds(10)))
        }
        #expect(result.passed, "\(result.report)")
    }

    /// Without the app's recovery, AsyncHTTPClient alone meets the incident: each request after
    /// unlock takes a dead pooled connection and is reset.
    @Test func withoutRecoveryTheLockScreenBreaksIt() async throws {
        let result = try await Netsim.run(scenario: Self.lockscreen, name: "FeedClient (no recovery)") { config in
            Adapter(client: FeedClient(timeout: config.timeout ?? .seconds(10), recoversDeadConnections: false))
        }
        #expect(!result.passed)
        #expect(result.failures.map(\.title).contains("request after-unlock: error none"), "\(result.report)")
    }

    /// The same incident by hand: warm the pool, make its connection stale, ask again.
    @Test func recoversFromAStaleConnectionByHand() async throws {
        let network = try await TestNetwork.start(
            routes: [HTTPRoute(path: "/feed", headers: [HTTPHeader("Content-Type", "application/json")], body: .text(#"{"items":[1,2]}"#))],
            profile: "lte")
        let client = FeedClient(timeout: .seconds(5))
        let base = network.url("/")
        #expect(try await client.items(from: base) == [1, 2])

        try await network.inject("stale=rst", target: .existing)
        #expect(try await client.items(from: base) == [1, 2])

        await client.shutdown()
        await network.stop()
        let requests = network.serverRequests
        #expect(requests.count == 2)
        #expect(requests.map(\.connection) == [1, 2], "the retry went out on a new connection")
    }
}
