import Foundation
import NetsimCore
import NetsimFaults
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

    /// A fault in force from the start for 300 ms (`--fault-for` without `--fault-at`), two
    /// destinations first used after it: both answered by their servers, and the log has the
    /// fault once, added at the start and lifted at 300 ms. Before, each destination's relay
    /// started the window again at its first use (both requests were reset), and logged
    /// `fault_added` and `fault_lifted` once per destination, whenever it was first used.
    @Test(arguments: [FaultTrigger.immediately, .at(.zero)])
    func aFaultsWindowAndItsEventsAreTheProxys(trigger: FaultTrigger) async throws {
        let first = try ForwardProxyTests.httpServer(recording: ForwardProxyTests.RequestLines())
        let second = try ForwardProxyTests.httpServer(recording: ForwardProxyTests.RequestLines())
        defer { first.stop(); second.stop() }
        let rule = FaultRule(.rst, trigger: trigger, lasts: .milliseconds(300))
        let proxy = ForwardProxy(configuration: .init(faults: [rule]), threads: 1)
        let started = ContinuousClock.now
        let bound = try await proxy.start()
        try await Task.sleep(until: started + .milliseconds(600))  // past the fault's window
        let answers = [try await Self.get(first.endpoint, through: bound), try await Self.get(second.endpoint, through: bound)]
        await proxy.stop()
        #expect(answers.map(\.status) == [200, 200])
        let events = proxy.eventLog.events
        let lifecycle = events.compactMap { event -> (String, Int64)? in
            switch event.kind {
            case .faultAdded: ("added", event.time)
            case .faultLifted: ("lifted", event.time)
            default: nil
            }
        }
        #expect(lifecycle.map(\.0) == ["added", "lifted"], "\(lifecycle)")
        // Timed by the log's own stamps (the timeline starts as the proxy is made, its log too):
        // lifted when the window ended, before the requests made after it.
        let firstOpened = events.first { if case .opened = $0.kind { true } else { false } }?.time ?? .max
        if lifecycle.count == 2 {
            #expect(lifecycle[1].1 >= 290_000_000 && lifecycle[1].1 < firstOpened, "\(lifecycle), first connection at \(firstOpened)")
        }
    }

    /// The proxy stopped inside a window logs its end, cut short, once; a window not begun
    /// gets none.
    @Test func aWindowInForceWhenTheProxyStopsEndsInTheLog() async throws {
        let server = try ForwardProxyTests.httpServer(recording: ForwardProxyTests.RequestLines())
        defer { server.stop() }
        let rules = [FaultRule(.blackhole, trigger: .immediately, lasts: .seconds(60)), FaultRule(.rst, trigger: .at(.seconds(60)), lasts: .seconds(1))]
        let proxy = ForwardProxy(configuration: .init(faults: rules), threads: 1)
        let bound = try await proxy.start()
        // A connection the blackhole holds: its last events, at the stop, still name the fault,
        // so the window ends after them (QA 46: the proxy ended it first).
        let socket = try await offload { try BlockingSocket.connect(to: bound) }
        defer { socket.close() }
        try await offload { try socket.send("GET http://\(server.endpoint)/ HTTP/1.1\r\nHost: \(server.endpoint)\r\n\r\n") }
        let held = await proxy.eventLog.waitFor(timeout: .seconds(60)) { if case .faultFired("blackhole", _) = $0.kind { true } else { false } }
        await proxy.stop()
        #expect(held != nil)
        let ends = proxy.eventLog.events.compactMap { event -> String? in
            if case .faultLifted(let fault, let cutShort) = event.kind { "\(fault) \(cutShort ?? "-")" } else { nil }
        }
        #expect(ends == ["blackhole proxy stopped"])
        let kinds = proxy.eventLog.events.map(\.kind.name)
        #expect(kinds.last == "fault_lifted" && kinds.contains("closed"), "\(kinds)")
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
