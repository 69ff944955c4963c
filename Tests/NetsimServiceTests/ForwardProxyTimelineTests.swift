import Foundation
import NetsimCore
import NetsimLoopback
import NetsimRelay
import Testing
@testable import NetsimService

/// The proxy's relays (one per destination, started on first use) share the proxy's timeline:
/// `--fault-at` counts from the proxy's start, and connection ids are the proxy's.
@Suite("Forward proxy: one timeline")
struct ForwardProxyTimelineTests {
    typealias H = HTTPTestSupport

    static func get(_ server: Endpoint, through proxy: Endpoint) async throws -> H.Response {
        try await offload {
            let socket = try BlockingSocket.connect(to: proxy)
            defer { socket.close() }
            try socket.send("GET http://\(server)/ HTTP/1.1\r\nHost: \(server)\r\n\r\n")
            return try H.readResponse(socket, timeout: ForwardProxyTests.patience)
        }
    }

    /// An outage in force for the proxy's first 300 ms: a destination first used after that is
    /// answered by its server. Before, its relay counted the fault from its own start, so the
    /// first request to it, whenever it came, got the outage's 503.
    @Test func aFaultWhoseWindowHasPassedDoesNotActOnADestinationUsedLater() async throws {
        let lines = ForwardProxyTests.RequestLines()
        let server = try ForwardProxyTests.httpServer(recording: lines)
        defer { server.stop() }
        let rule = FaultRule(.outage(.serviceUnavailable), trigger: .at(.zero), lasts: .milliseconds(300))
        let proxy = ForwardProxy(configuration: .init(faults: [rule]), threads: 1)
        let started = ContinuousClock.now
        let bound = try await proxy.start()
        // The scenario's own time, not a wait for something to happen: past the fault's window.
        try await Task.sleep(until: started + .milliseconds(600))
        let response = try await Self.get(server.endpoint, through: bound)
        await proxy.stop()
        #expect(response.status == 200, "\(response.head)\n\(response.body)")
        #expect(lines.all == ["GET / HTTP/1.1"])
    }

    /// Two destinations, a connection each: ids 1 and 2 in the proxy's log, not 1 twice.
    @Test func connectionIdsAreTheProxysAcrossDestinations() async throws {
        let first = try ForwardProxyTests.httpServer(recording: ForwardProxyTests.RequestLines())
        let second = try ForwardProxyTests.httpServer(recording: ForwardProxyTests.RequestLines())
        defer { first.stop(); second.stop() }
        let proxy = ForwardProxy(configuration: .init(), threads: 1)
        let bound = try await proxy.start()
        let answers = [try await Self.get(first.endpoint, through: bound), try await Self.get(second.endpoint, through: bound)]
        await proxy.stop()
        #expect(answers.map(\.status) == [200, 200])
        let opened = proxy.eventLog.events.compactMap { event -> UInt64? in
            if case .opened = event.kind { event.connection?.raw } else { nil }
        }
        #expect(opened.sorted() == [1, 2], "\(opened)")
    }
}
