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

    /// Waits (at most 30 s) for connection `id`'s blackhole to be lifted.
    static func lift(on id: ConnectionID, in relay: Relay) async -> Event? {
        await relay.eventLog.waitFor(timeout: .seconds(30)) { $0.connection == id && { if case .faultLifted("blackhole", nil) = $0.kind { true } else { false } }($0) }
    }

    /// When the connection opened, and when its blackhole was lifted (seconds), once both are logged.
    static func openedAndLifted(_ events: [Event]) -> (opened: Double, lifted: Double)? {
        guard let opened = events.first(where: { if case .opened = $0.kind { true } else { false } }),
              events.contains(where: { if case .faultFired("blackhole", _) = $0.kind { true } else { false } }),
              let lifted = events.first(where: { if case .faultLifted("blackhole", nil) = $0.kind { true } else { false } })
        else { return nil }
        return (Double(opened.time) / 1e9, Double(lifted.time) / 1e9)
    }

    /// The rule fires 100 ms after each open and lasts 1 s there. The first connection opens
    /// 500 ms after the rule was added, the second once the first's fault has lifted (after the
    /// old rule-wide lift, 1 s after the rule was added, which left the second none and the
    /// first 0.5 s). The bound on each span (0.8 s against the 1.1 s expected) leaves room for
    /// where a loaded machine stamps the open (10 ms after the accept was seen in CI).
    @Test func eachConnectionHasTheFaultForItsFullSpanWhenEverItOpens() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        let rule = FaultRule(.blackhole, trigger: .after(.milliseconds(100)), lasts: .seconds(1))
        try await withRelay(upstream: server.endpoint, faults: [rule]) { relay, endpoint in
            try await Task.sleep(for: .milliseconds(500))  // the scenario's own time: the first opens late
            let first = try await offload { try BlockingSocket.connect(to: endpoint) }
            defer { first.close() }
            _ = await Self.lift(on: ConnectionID(1), in: relay)
            let second = try await offload { try BlockingSocket.connect(to: endpoint) }
            defer { second.close() }
            _ = await Self.lift(on: ConnectionID(2), in: relay)
            for id in [ConnectionID(1), ConnectionID(2)] {
                let span = try #require(Self.openedAndLifted(Self.events(relay, of: id)), "connection \(id): \(Self.events(relay, of: id).map(\.kind))")
                #expect(span.lifted - span.opened >= 0.8, "connection \(id): lifted \(span.lifted - span.opened) s after it opened")
            }
            // The rule is still there for the next connection.
            #expect(!relay.eventLog.events.contains { $0.connection == nil && { if case .faultLifted = $0.kind { true } else { false } }($0) })
        }
    }
}
