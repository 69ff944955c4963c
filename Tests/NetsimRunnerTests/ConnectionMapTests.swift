import NetsimCore
import NetsimRoutes
@testable import NetsimRunner
import Testing

/// Which relay connection carried each request: by the client's local port, or by the request
/// tag the relay logged (for clients that cannot tell their port, such as URLSession).
@Suite("Connection map")
struct ConnectionMapTests {
    static func outcome(_ name: String, finished: Int64, port: Int? = nil) -> RequestOutcome {
        RequestOutcome(name: name, index: 0, method: "GET", path: "/", started: 0, finished: finished,
                       response: DriverResponse(status: 200, localPort: port))
    }

    static let events = [
        Event(time: 10, connection: ConnectionID(1), kind: .opened(client: Endpoint(host: "127.0.0.1", port: 5001))),
        Event(time: 20, connection: ConnectionID(1), kind: .httpRequest(method: "GET", path: "/", reused: false, tag: "first#1")),
        Event(time: 50, connection: ConnectionID(2), kind: .opened(client: Endpoint(host: "127.0.0.1", port: 5002))),
        // `second` went out on #1 (a dead pooled connection), then its retry on #2.
        Event(time: 60, connection: ConnectionID(1), kind: .httpRequest(method: "GET", path: "/", reused: true, tag: "second#1")),
        Event(time: 70, connection: ConnectionID(2), kind: .httpRequest(method: "GET", path: "/", reused: false, tag: "second#1")),
    ]

    @Test func aTaggedRequestIsMappedToItsLastAttemptsConnection() {
        let mapped = ConnectionMap(events: Self.events).attach(to: [
            Self.outcome("first", finished: 30), Self.outcome("second", finished: 80),
        ])
        #expect(mapped.map(\.connection) == [ConnectionID(1), ConnectionID(2)])
        #expect(mapped.map(\.connectionOpened) == [10, 50])
        #expect(mapped.map(\.reusedConnection) == [false, false])
    }

    @Test func onlyAttemptsBeforeTheRequestFinishedCount() {
        let mapped = ConnectionMap(events: Self.events).attach(to: [Self.outcome("second", finished: 65)])
        #expect(mapped.first?.connection == ConnectionID(1))
    }

    @Test func theLocalPortWinsWhenTheClientReportsIt() {
        let mapped = ConnectionMap(events: Self.events).attach(to: [Self.outcome("second", finished: 80, port: 5001)])
        #expect(mapped.first?.connection == ConnectionID(1))
    }

    /// On a packet link the built-in server's peer is the client itself: its tagged request on
    /// server connection 2, from port 5002, went over the connection the link saw open from 5002.
    @Test func onAPacketLinkTheServersPeerPortMapsATaggedRequest() {
        let opened = Self.events.filter { if case .opened = $0.kind { true } else { false } }
        let requests = [
            ServerRequest(method: "GET", path: "/", bodyBytes: 0, connection: 1, reusedConnection: false, time: 20, status: 200, tag: "first#1"),
            ServerRequest(method: "GET", path: "/", bodyBytes: 0, connection: 2, reusedConnection: false, time: 70, status: 200, tag: "second#1"),
        ]
        let peers = [1: Endpoint(host: "198.18.0.2", port: 5001), 2: Endpoint(host: "198.18.0.2", port: 5002)]
        let mapped = ConnectionMap(events: opened, serverRequests: requests, peers: peers).attach(to: [
            Self.outcome("first", finished: 30), Self.outcome("second", finished: 80),
        ])
        #expect(mapped.map(\.connection) == [ConnectionID(1), ConnectionID(2)])
        // Without the peers (relay mode: the server's peer is the relay) nothing is guessed.
        #expect(ConnectionMap(events: opened, serverRequests: requests).attach(to: [Self.outcome("first", finished: 30)]).first?.connection == nil)
    }

    @Test func anUntaggedRequestWithoutAPortStaysUnknown() {
        let mapped = ConnectionMap(events: Self.events).attach(to: [Self.outcome("other", finished: 80)])
        #expect(mapped.first?.connection == nil)
    }
}
