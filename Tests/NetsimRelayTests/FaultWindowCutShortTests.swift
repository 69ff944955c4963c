import NetsimCore
import NetsimFaults
import NetsimLoopback
import Testing
@testable import NetsimRelay

/// A relay stopped inside a fault's window (Ctrl-C during `--fault-for 10s`) logs that window's
/// end, marked cut short: before, the log announced "blackhole … for 10s" and never ended it.
@Suite("a fault window cut short by the relay's stop")
struct FaultWindowCutShortTests {
    @Test func aWindowInForceWhenTheRelayStopsEndsInTheLog() async throws {
        let rules = [
            FaultRule(.blackhole, trigger: .immediately, lasts: .seconds(60)),       // in force: cut short
            FaultRule(.rst, trigger: .at(.seconds(60)), lasts: .seconds(1)),         // not begun: no end
            FaultRule(.stale(.fin), trigger: .immediately),                          // no window: no end
        ]
        let server = try RecordingServer()
        defer { server.stop() }
        let relay = Relay(configuration: RelayConfiguration(upstream: server.endpoint, faults: rules))
        let endpoint = try await relay.start()
        // A connection the blackhole holds: its last events, at the stop, still name the fault,
        // so the window ends after them.
        let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
        defer { socket.close() }
        try await offload { try socket.send("hello") }
        let held = await relay.eventLog.waitFor(timeout: .seconds(60)) { if case .faultFired("blackhole", _) = $0.kind { true } else { false } }
        await relay.stop()
        #expect(held != nil)
        let ends = relay.eventLog.events.compactMap { event -> String? in
            if case .faultLifted(let fault, let cutShort) = event.kind { "\(fault) \(cutShort ?? "-")" } else { nil }
        }
        #expect(ends == ["blackhole relay stopped"])
        let kinds = relay.eventLog.events.map(\.kind.name)
        #expect(kinds.suffix(3) == ["closed", "fault_lifted", "listener_closed"], "\(kinds)")
        let line = relay.eventLog.events.first { $0.kind.name == "fault_lifted" }.map(\.jsonLine)
        #expect(line?.contains(#""fault":"blackhole","cut_short":"relay stopped""#) == true, "\(line ?? "none")")
    }

    /// A window that ended on its own is logged once, not again at the stop.
    @Test func aWindowThatEndedIsNotEndedAgain() async throws {
        let relay = Relay(configuration: RelayConfiguration(upstream: Endpoint(host: "127.0.0.1", port: 9),
                                                            faults: [FaultRule(.blackhole, trigger: .immediately, lasts: .milliseconds(50))]))
        _ = try await relay.start()
        await relay.eventLog.waitFor(timeout: .seconds(30)) { if case .faultLifted = $0.kind { true } else { false } }
        await relay.stop()
        let ends = relay.eventLog.events.filter { $0.kind.name == "fault_lifted" }
        #expect(ends.count == 1)
        #expect(ends.allSatisfy { if case .faultLifted(_, nil) = $0.kind { true } else { false } })
    }
}
