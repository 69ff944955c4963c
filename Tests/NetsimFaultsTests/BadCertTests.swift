import NetsimCore
import NetsimFaults
import Testing

@Suite("bad-cert, on the machine")
struct BadCertTests {
    @Test("each kind parses; none and unknown ones say what is allowed")
    func vocabulary() throws {
        for kind in BadCertificateKind.allCases {
            #expect(try FaultCatalog.parse("bad-cert=\(kind.rawValue)") == .badCert(kind))
        }
        #expect(throws: UnitParseError.self) { try FaultCatalog.parse("bad-cert") }
        #expect(throws: UnitParseError.self) { try FaultCatalog.parse("bad-cert=revoked") }
    }

    @Test("a new connection under bad-cert still connects — to the relay's own TLS — and says so")
    func theConnectionIsImpersonated() {
        let h = MachineHarness(faults: [.badCert(.expired)], connect: false)
        #expect(h.machine.tlsImpersonation == .expired)
        #expect(h.connectRequested)
        #expect(h.events.contains { if case .faultFired(_, let detail) = $0 { detail.contains("expired certificate") } else { false } })
        #expect(MachineHarness().machine.tlsImpersonation == nil)
    }
}
