import Foundation
import NetsimLoopback
import NetsimTesting
import Testing

/// A relay with faults for hand-written tests: what a test sets is what its client meets.
@Suite("NetsimTesting: TestNetwork")
struct TestNetworkTests {
    static let routes = [HTTPRoute(path: "/feed", body: .text("fresh"))]

    static func get(_ socket: BlockingSocket) throws -> String {
        try socket.send("GET /feed HTTP/1.1\r\nHost: netsim\r\n\r\n")
        return String(decoding: try socket.receive(), as: UTF8.self)
    }

    /// The lock screen by hand: a kept-alive connection goes stale; its next request is reset,
    /// a new connection works, and the log has the fault and the reset.
    @Test func aStaleFaultResetsTheOpenConnectionOnly() async throws {
        let network = try await TestNetwork.start(routes: Self.routes)
        let pooled = try BlockingSocket.connect(to: network.endpoint)
        defer { pooled.close() }
        #expect(try Self.get(pooled).hasSuffix("fresh"))

        try await network.inject("stale=rst", target: .existing)
        #expect(throws: SocketFailure.reset) {
            try pooled.send("GET /feed HTTP/1.1\r\nHost: netsim\r\n\r\n")
            _ = try pooled.receive()
        }
        let fresh = try BlockingSocket.connect(to: network.endpoint)
        defer { fresh.close() }
        #expect(try Self.get(fresh).hasSuffix("fresh"))

        await network.stop()
        #expect(network.serverRequests.count == 2)
        #expect(network.events.contains { "\($0.kind)".contains("stale") }, "\(network.events)")
    }

    @Test func aRefusalHoldsUntilLifted() async throws {
        let network = try await TestNetwork.start(routes: Self.routes, profile: "lte")
        let refusal = try await network.inject("refuse")
        #expect(throws: SocketFailure.refused) { _ = try BlockingSocket.connect(to: network.endpoint) }
        await network.lift(refusal)
        let socket = try BlockingSocket.connect(to: network.endpoint)
        defer { socket.close() }
        #expect(try Self.get(socket).hasSuffix("fresh"))
        #expect(network.url("/feed").absoluteString == "http://127.0.0.1:\(network.endpoint.port)/feed")
        await network.stop()
    }

    @Test func badNamesSayWhatIsAllowed() async throws {
        await #expect { _ = try await TestNetwork.start(routes: Self.routes, profile: "5g-dreams") } throws: {
            "\($0)".contains("available:") && "\($0)".contains("3g")
        }
        let network = try await TestNetwork.start(routes: Self.routes)
        await #expect { try await network.inject("stail=rst") } throws: { "\($0)".contains("stale") }
        await network.stop()
    }
}
