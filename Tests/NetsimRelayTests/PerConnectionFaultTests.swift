import Foundation
import NetsimCore
import NetsimFaults
import NetsimLoopback
import NetsimRelay
import Testing

/// `--fault-after D --fault-for F` (a scenario's `after_open` with `for`): the fault fires on
/// each connection D after it opened and is lifted from that connection F after it fired. The
/// rule stays for connections still to come. Before, one lift removed the whole rule F after it
/// was added: the first connections had it cut short, later ones never had it.
@Suite("per-connection faults and their lift")
struct PerConnectionFaultTests {
    /// Events of connection `id`, in order.
    static func events(_ relay: Relay, of id: ConnectionID) -> [Event] {
        relay.eventLog.events.filter { $0.connection == id }
    }

    /// When the connection opened, and when its blackhole was lifted (seconds), once both are logged.
    static func openedAndLifted(_ events: [Event]) -> (opened: Double, lifted: Double)? {
        guard let opened = events.first(where: { if case .opened = $0.kind { true } else { false } }),
              events.contains(where: { if case .faultFired("blackhole", _) = $0.kind { true } else { false } }),
              let lifted = events.first(where: { if case .faultLifted("blackhole") = $0.kind { true } else { false } })
        else { return nil }
        return (Double(opened.time) / 1e9, Double(lifted.time) / 1e9)
    }

    @Test func eachConnectionHasTheFaultForItsFullSpanWhenEverItOpens() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        let rule = FaultRule(.blackhole, trigger: .after(.milliseconds(100)), lasts: .milliseconds(300))
        try await withRelay(upstream: server.endpoint, faults: [rule]) { relay, endpoint in
            let first = try await offload { try BlockingSocket.connect(to: endpoint) }
            defer { first.close() }
            // The second opens once the first's fault has been lifted: well after the moment
            // the rule-wide lift of old removed the rule (300 ms after it was added).
            let deadline = ContinuousClock.now + .seconds(20)
            while Self.openedAndLifted(Self.events(relay, of: ConnectionID(1))) == nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))  // polling the log, with a deadline
            }
            let second = try await offload { try BlockingSocket.connect(to: endpoint) }
            defer { second.close() }
            while Self.openedAndLifted(Self.events(relay, of: ConnectionID(2))) == nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            for id in [ConnectionID(1), ConnectionID(2)] {
                let span = try #require(Self.openedAndLifted(Self.events(relay, of: id)), "connection \(id): \(Self.events(relay, of: id).map(\.kind))")
                // Timers are never early: fired 100 ms after the open, lifted 300 ms after that
                // (10 ms of slack for where the open's event is stamped). The old rule-wide lift
                // came under 300 ms after the first connection opened.
                #expect(span.lifted - span.opened >= 0.39, "connection \(id): lifted \(span.lifted - span.opened) s after it opened")
            }
            // The rule is still there for the next connection.
            #expect(!relay.eventLog.events.contains { $0.connection == nil && { if case .faultLifted = $0.kind { true } else { false } }($0) })
        }
    }
}
