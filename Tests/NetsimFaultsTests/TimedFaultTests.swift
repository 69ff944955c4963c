import NetsimCore
import NetsimFaults
import Testing

@Suite("Timed faults and where faults can act")
struct TimedFaultTests {
    @Test("NAME[=ARGUMENT][@AT][+FOR] parses with the catalog's own fault syntax", arguments: [
        ("offline@2s+3s", "offline", 2.0, 3.0 as Double?), ("handover@5s", "handover", 5.0, nil),
        ("udp-block=443", "udp-block=443", 0.0, nil), ("stale=rst@1.5s", "stale=rst", 1.5, nil),
        ("blackhole+250ms", "blackhole", 0.0, 0.25),
    ])
    func parses(text: String, fault: String, at: Double, lasts: Double?) throws {
        let timed = try TimedFault(parsing: text)
        #expect(timed.kind.description == fault)
        #expect(timed.at == .milliseconds(Int64(at * 1000)))
        #expect(timed.lasts == lasts.map { .milliseconds(Int64($0 * 1000)) })
        #expect(try TimedFault(parsing: timed.written) == timed)
    }

    @Test("a bad time or fault says which part and what was expected", arguments: [
        ("offline@soon", "whose @AT is a duration"), ("offline@1s+0s", "whose +FOR is a positive duration"),
        ("nosuch@1s", "a fault"), ("udp-block=http", "a UDP port"),
    ])
    func badInput(text: String, expected: String) {
        do {
            _ = try TimedFault(parsing: text)
            Issue.record("\(text) parsed")
        } catch {
            #expect(error.expected.contains(expected), "\(error.expected)")
            #expect(error.input == text)
        }
    }

    @Test("packet-only faults are marked so in the table and refused by the relay with the way out")
    func packetOnly() throws {
        for name in ["offline", "handover", "udp-block"] {
            let type = try #require(FaultCatalog.named(name))
            #expect(type.paths == .packet)
            #expect(FaultCatalog.rows.first { $0[0].hasPrefix(name) }?[2] == "packet")
            let rule = FaultRule(try FaultKind(parsing: name))
            #expect(throws: FaultRuleError.self) { try rule.validate() }
            do { try rule.validate() } catch {
                #expect("\(error)".contains("packet-only fault"), "\(error)")
                #expect("\(error)".contains("netsim shell --fault \(name)"), "\(error)")
            }
        }
        #expect(FaultCatalog.named("stale")?.paths == [.relay, .packet])
        #expect(FaultCatalog.named("blackhole")?.paths == [.relay, .packet])
        #expect(FaultCatalog.named("portal")?.paths == .relay)
        #expect(FaultCatalog.rows.first { $0[0].hasPrefix("portal") }?[2] == "relay")
    }
}
