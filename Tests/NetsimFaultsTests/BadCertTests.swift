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
        #expect(h.machine.tlsImpersonation?.kind == .expired)
        #expect(h.connectRequested)
        #expect(h.events.contains { if case .faultFired(_, let detail) = $0 { detail.contains("expired certificate") } else { false } })
        #expect(MachineHarness().machine.tlsImpersonation == nil)
    }
}

@Suite("portal tls=self-signed, on the machine")
struct PortalSelfSignedTests {
    static let portal = FaultKind.portal(PortalSettings(answer: .page, tls: .selfSigned))

    @Test("parses, and prints as written")
    func vocabulary() throws {
        #expect(try FaultCatalog.parse("portal=page,tls=self-signed") == Self.portal)
        #expect(Self.portal.answersTLSItself)
        #expect(!FaultKind.portal().answersTLSItself)
    }

    @Test("a ClientHello leaves the portal for the relay's own TLS, its bytes first; nothing is impersonated before")
    func aHandshakeIsAnsweredWithACertificate() {
        var h = MachineHarness(faults: [Self.portal], connect: false)
        #expect(!h.connectRequested, "a portal connects nowhere until it knows what the client speaks")
        #expect(h.machine.tlsImpersonation == nil)
        h.receive(TLSStallTests.clientHello, from: .client)
        #expect(h.connectRequested)
        #expect(h.machine.tlsImpersonation?.kind == .selfSigned)
        #expect(h.machine.tlsImpersonation?.fault == FaultName("portal"))
        #expect(h.parsed.isEmpty, "the handshake is not parsed as HTTP")
        h.connectIfAsked()
        #expect(h.sent[.upstream] == TLSStallTests.clientHello, "the ClientHello reaches the impersonating TLS server intact")
        #expect(h.events.contains { if case .faultFired(_, let detail) = $0 { detail.contains("self-signed certificate of its own") } else { false } })
        // The portal's login lifts it; the connection stays with the certificate it was shown.
        h.machine.lift(FaultID(raw: 1), now: h.now)
        h.process()
        #expect(h.machine.tlsImpersonation?.kind == .selfSigned)
        #expect(!h.connectRequested)
    }

    @Test("plain HTTP still gets the portal's page, and no certificate")
    func plainHTTPIsTheLoginPage() {
        var h = MachineHarness(faults: [Self.portal], connect: false)
        h.receive("GET / HTTP/1.1\r\nHost: example.test\r\n\r\n", from: .client)
        #expect(!h.parsed.isEmpty)
        #expect(h.machine.tlsImpersonation == nil)
        #expect(!h.connectRequested)
    }
}
