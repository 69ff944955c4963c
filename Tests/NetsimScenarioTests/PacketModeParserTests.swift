import NetsimCore
import NetsimFaults
import NetsimLink
import Testing
@testable import NetsimScenario

/// `link: { mode: packet }`: what a packet link reads, and a clear error (with its place) for
/// each thing only the relay can do — or only a packet path.
@Suite("Scenario files: link mode packet")
struct PacketModeParserTests {
    static let file = "Scenarios/packet.scn"

    /// A scenario with `link` (indented under `link:`), extra top-level text, timeline steps and
    /// checks added to the defaults.
    static func scenario(link: String = "  mode: packet", top: String = "", steps: String = "", checks: String = "", upstream: String = "  routes:\n    - path: /feed") -> String {
        """
        name: packet
        description: A packet link.
        upstream:
        \(upstream)
        link:
        \(link)
        \(top)
        client:
          driver: resilient
        timeline:
          - request: feed
            path: /feed
        \(steps)
        expect:
          - request: feed
            status: 200
        \(checks)

        """
    }

    func parse(_ text: String) throws -> Scenario { try ScenarioParser.parse(source: text, file: Self.file) }

    func diagnostics(_ text: String) -> [Diagnostic] { parseDiagnostics(text, file: Self.file) }

    @Test func thePacketLinkIsTheModelWithItsPacketSettingsAndDNS() throws {
        let text = Self.scenario(link: "  mode: packet\n  latency: 40ms\n  bandwidth: 10mbit\n  queue: 100p\n  up: { reorder: 1% }",
                                 top: "dns:\n  names: { api.test: host }")
        let scenario = try parse(text)
        #expect(scenario.linkMode == .packet)
        #expect(scenario.packetLink[.down].queue == .packets(100))
        #expect(scenario.packetLink[.up].queue == .packets(100))
        #expect(scenario.packetLink[.up].reorder == Probability(fraction: 0.01))
        #expect(scenario.packetLink[.down].reorder == nil)
        #expect(scenario.link.down.latency == .milliseconds(40))
        #expect(scenario.dns?.names == [DNSMapping(name: "api.test", target: .host)])
    }

    @Test func theHighLatencyDNSProfileDelaysTheResolversAnswers() throws {
        let scenario = try parse(Self.scenario(link: "  mode: packet\n  profile: high-latency-dns"))
        #expect(scenario.dns?.faults.delay == .seconds(3))
        let own = try parse(Self.scenario(link: "  mode: packet\n  profile: high-latency-dns", top: "dns:\n  delay: 1s"))
        #expect(own.dns?.faults.delay == .seconds(1), "the dns block's delay wins over the profile's")
    }

    @Test func relayModeIsTheDefaultAndPacketKeysThereAreErrorsAtTheirKey() {
        #expect((try? parse(Self.scenario(link: "  latency: 10ms")).linkMode) == .relay)
        let found = diagnostics(Self.scenario(link: "  bandwidth: 1mbit\n  queue: 50p"))
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.location == SourceLocation(file: Self.file, line: 8, column: 3))
        #expect(found.first?.message.hasPrefix("'queue' acts on single packets") == true)
        #expect(found.first?.hint?.contains("mode: packet") == true)
    }

    @Test func anUnknownModeListsTheModes() {
        let found = diagnostics(Self.scenario(link: "  mode: tun"))
        #expect(found.first?.message == "unknown link mode 'tun'", "\(found)")
        #expect(found.first?.hint?.contains("relay") == true && found.first?.hint?.contains("packet") == true, "\(found)")
    }

    @Test func relayOnlyFaultsAreRefusedWithThePacketFaultsNamed() {
        let found = diagnostics(Self.scenario(steps: "  - fault: outage=503"))
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.location.line == 14, "\(found)")
        #expect(found.first?.message.contains("outage acts on HTTP requests at a relay") == true, "\(found)")
        #expect(found.first?.message.contains(FaultCatalog.packetFaultNames) == true, "\(found)")
    }

    @Test func packetFaultsAreTimelineStepsAndTheirPerConnectionOptionsAreErrors() throws {
        let scenario = try parse(Self.scenario(steps: "  - fault: offline\n    for: 2s\n  - fault: handover\n  - fault: stale\n    target: existing"))
        let faults = scenario.timeline.compactMap { step -> String? in
            if case .fault(_, let rule) = step.action { return rule.kind.name } else { return nil }
        }
        #expect(faults == ["offline", "handover", "stale"])
        // Each error at the key it is about (the caret was under the fault for all of them).
        let faultLine = diagnostics(Self.scenario(steps: "  - fault: stale=fin")).first?.location.line ?? 0
        for (step, message, line, column) in [
            ("  - fault: offline\n    probability: 50%", "drop 'probability'", faultLine + 1, 5),
            ("  - fault: blackhole\n    target: new", "drop 'target'", faultLine + 1, 5),
            ("  - fault: handover\n    for: 1s", "one instant", faultLine + 1, 5),
            ("  - fault: stale=fin", "stale=fin is a relay fault", faultLine, 12),
        ] {
            let found = diagnostics(Self.scenario(steps: step))
            #expect(found.count == 1 && found.first?.message.contains(message) == true, "\(step): \(found)")
            #expect(found.first?.location.line == line && found.first?.location.column == column, "\(step): \(found)")
        }
    }

    @Test func whatOnlyTheRelayDoesIsRefusedWhereItIsWritten() {
        let cases: [(text: String, line: Int, message: String)] = [
            (Self.scenario(checks: "  - relay:\n      bytes: { min: 1 }"), 19, "'bytes' counts what the relay delivered"),
            (Self.scenario(checks: "  - relay:\n      requests: { count: 1 }"), 19, "'requests' counts the HTTP the relay observed"),
            (Self.scenario(link: "  mode: packet\n  slice: 100"), 8, "'slice' cuts the relay's writes"),
            (Self.scenario(upstream: "  address: 127.0.0.1:8080"), 3, "not on the packet link"),
            (Self.scenario(link: "  mode: packet\n  bandwidth: 1mbit\n  up: { reorder: 1% }"), 9, "reordering up needs a latency"),
            // QA 38: a queue with no rate passed unless a reorder was set too, and was ignored.
            (Self.scenario(link: "  mode: packet\n  queue: 100p"), 8, "a queue forms only behind a rate limit, and the link has none either way"),
            (Self.scenario(link: "  mode: packet\n  down: { bandwidth: 1mbit }\n  queue: 100p"), 9, "and the link has none up"),
        ]
        for item in cases {
            let found = diagnostics(item.text)
            #expect(found.contains { $0.location.line == item.line && $0.message.contains(item.message) }, "\(item.message): \(found)")
            #expect(found.count == 1, "one error for one mistake: \(found)")
        }
    }

    @Test func anHTTPSUpstreamNeedsANameForItsCertificate() {
        let found = diagnostics(Self.scenario(upstream: "  tls: true\n  routes:\n    - path: /feed"))
        #expect(found.contains { $0.message.contains("needs a name for its certificate") }, "\(found)")
        let named = diagnostics(Self.scenario(top: "dns:\n  names: { api.test: host }", upstream: "  tls: true\n  routes:\n    - path: /feed"))
        #expect(named.isEmpty, "\(named)")
    }

    /// Every problem at once: a bad timeline step does not hide a check a packet link cannot make.
    @Test func aTimelineErrorDoesNotHideThePacketChecksErrors() {
        let found = diagnostics(Self.scenario(steps: "  - fault: outage=503", checks: "  - relay:\n      bytes: { min: 1 }"))
        #expect(found.contains { $0.message.contains("outage acts on HTTP requests") }, "\(found)")
        #expect(found.contains { $0.message.contains("'bytes' counts what the relay delivered") }, "\(found)")
    }
}
