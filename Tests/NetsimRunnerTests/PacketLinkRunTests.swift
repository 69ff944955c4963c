import NetsimCore
import NetsimRunner
import NetsimScenario
import Testing

/// A scenario on a packet link (Linux, root): the timeline's fault, clear and link steps act on
/// the packet path while it runs, and the link records the client's connections.
@Suite("Scenarios on a packet link")
struct PacketLinkRunTests {
    static let source = """
        name: packet-steps
        description: offline, lifted by name, then a slower link
        upstream:
          routes:
            - path: /
              body: here
        link:
          mode: packet
          latency: 10ms
        client:
          driver: resilient
          timeout: 2s
          retries: 0
        timeline:
          - request: before
            path: /
          - fault: offline
            name: down
          - wait: 300ms
          - request: offline
            path: /
          - clear: down
          - wait: 500ms
          - link: { latency: 300ms }
          - request: slow
            path: /
        expect:
          - request: before
            status: 200
          - request: offline
            error: any
          - request: slow
            status: 200
            body: here
          - relay:
              new_connections: { min: 1 }
        """

    static let missing: String? = (try? scenario(source)).flatMap(ScenarioRunner.cannotRun)

    /// The run's header names the packet link's own settings (QA 38: `corrupt: 100%` showed as
    /// `link: unimpaired`). No root needed: it only describes.
    @Test func theHeaderSaysThePacketOnlySettings() throws {
        let packet = try scenario(Self.source.replacingOccurrences(of: "link:\n", with: "link:\n  corrupt: 2%\n  bandwidth: 1mbit\n  queue: 50p\n"))
        #expect(packet.appliedLinkDescription.contains("corrupt 2%"), "\(packet.appliedLinkDescription)")
        #expect(packet.appliedLinkDescription.contains("queue 50 packets"), "\(packet.appliedLinkDescription)")
    }

    @Test(.enabled(if: missing == nil, "link mode packet cannot run here"))
    func faultsClearsAndLinkStepsActOnThePacketPath() async throws {
        let result = try await run(try scenario(Self.source))
        #expect(result.passed, "\(TextReport.render(result))")
        // The built-in driver runs in the namespace as `netsim exec-client`; reports name it as a
        // relay run does (QA 64: "exec: resilient").
        #expect(result.driverName == ResilientDriver(client: try scenario(Self.source).client).name)
        let kinds = result.events.map(\.kind)
        #expect(kinds.contains(.faultFired(fault: "offline", detail: "the namespace's interface is down: connects fail with ENETUNREACH, open connections hear nothing")))
        #expect(kinds.contains(.faultLifted(fault: "offline")))
        #expect(kinds.contains { if case .linkChanged = $0 { true } else { false } })
        // The connections the client began, from inside the namespace.
        let opened = result.events.compactMap { event -> Endpoint? in
            if case .opened(let client?) = event.kind { client } else { nil }
        }
        #expect(!opened.isEmpty && opened.allSatisfy { $0.host.hasPrefix("198.18.") }, "\(opened)")
        // …and their ends: the connection the interface's outage killed ended by the client's
        // timeout (its FIN, then the server's), so closes are in the log too.
        #expect(result.events.contains { if case .closed = $0.kind { true } else { false } }, "\(result.events.map(\.kind))")
        // 300 ms each way from the link step on: at least one round trip, 600 ms (a lower bound;
        // delays are never shorter than asked).
        let slow = try #require(result.outcomes.first { $0.name == "slow" })
        #expect(slow.duration >= 600_000_000, "slow took \(slow.duration) ns")
    }
}
