import NetsimCore
import Testing
@testable import NetsimScenario

/// A scenario's `dns:` block: read with positions like the rest of the format, kept in the model,
/// refused (with the reason) when the scenario runs through the relay.
@Suite("Scenario files: dns")
struct DNSBlockTests {
    static let file = "Scenarios/dns.scn"

    static func scenario(_ dns: String, link: String = "") -> String {
        """
        name: dns
        description: Lookups under DNS faults.
        upstream:
          routes:
            - path: /feed
        \(link)
        \(dns)
        client:
          driver: urlsession
        timeline:
          - request: feed
            path: /feed
        expect:
          - request: feed
            status: 200

        """
    }

    func diagnostics(_ text: String) -> [Diagnostic] { parseDiagnostics(text, file: Self.file) }

    @Test func aValidBlockIsRefusedAtItsKeyWithTheReason() {
        let found = diagnostics(Self.scenario("dns:\n  names: { api.test: host }\n  delay: 3s\n  fail: servfail"))
        #expect(found.count == 1)
        #expect(found.first?.location == SourceLocation(file: Self.file, line: 7, column: 1))
        #expect(found.first?.message == "dns: needs link mode packet or the forward proxy")
        #expect(found.first?.hint?.contains("mode: packet") == true)
    }

    @Test func eachBadValueIsReportedWhereItIsWritten() {
        let found = diagnostics(Self.scenario("dns:\n  names: { api.test: 10.0.0.1.5 }\n  delay: soon\n  fail: maybe\n  retries: 2"))
        let byLine = Dictionary(grouping: found, by: \.location.line)
        #expect(byLine[8]?.first?.message.contains("names:") == true, "\(found)")
        #expect(byLine[9]?.first?.location.column == 10, "\(found)")
        #expect(byLine[10]?.first?.message == "unknown DNS failure 'maybe'", "\(found)")
        #expect(byLine[11]?.first?.message == "unknown key 'retries' in 'dns'", "\(found)")
        // And the block is refused through the relay all the same: every problem at once (QA 40:
        // the refusal came only once the values were fixed).
        #expect(byLine[7]?.first?.message == "dns: needs link mode packet or the forward proxy", "\(found)")
    }

    @Test func theHighLatencyDNSProfileNeedsAResolverToo() {
        let found = diagnostics(Self.scenario("", link: "link:\n  profile: high-latency-dns"))
        #expect(found.count == 1)
        #expect(found.first?.message == "profile 'high-latency-dns' delays DNS answers; dns: needs link mode packet or the forward proxy")
        #expect(found.first?.location == SourceLocation(file: Self.file, line: 7, column: 12))
    }

    @Test func inPacketModeTheBlockIsTheModel() throws {
        let text = "dns:\n  names: { API.test: host, b.test: 2001:2::1 }\n  delay: 3s\n  fail: timeout\n"
        let document = try YAMLDocument.compose(text)
        let validator = Validator(file: Self.file, renamedKeys: document.renamedKeys)
        guard case .mapping(let pairs) = try #require(document.root), let (key, value) = pairs.first else { Issue.record("not a mapping"); return }
        let entry = Entry(key: "dns", keyNode: key, value: value, keyLocation: validator.location(key), valueLocation: validator.location(value))
        let dns = try #require(validator.dns(entry, packetMode: true), "\(validator.diagnostics)")
        #expect(dns.names == [DNSMapping(name: "api.test", target: .host), DNSMapping(name: "b.test", target: .address("2001:2::1"))])
        #expect(dns.faults == DNSFaults(delay: .seconds(3), failure: .timeout))
        #expect(dns.location == SourceLocation(file: Self.file, line: 1, column: 1))
    }
}
