import NetsimCore
import NetsimFaults
import NetsimLink
import Testing

@Suite("tls-stall, on the machine")
struct TLSStallTests {
    /// The start of a ClientHello: record type 22, TLS 1.0 record version, length, handshake type 1.
    static let clientHello: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x40, 0x01, 0x00, 0x00, 0x3c, 0x03, 0x03] + Array(repeating: 7, count: 32)

    @Test("a ClientHello is taken and never answered; the connection stays open")
    func aHandshakeNeverCompletes() {
        var h = MachineHarness(faults: [.tlsStall])
        h.receive(Self.clientHello, from: .client)
        #expect(h.sent[.upstream] == [], "the server never sees the ClientHello")
        h.advance(by: .seconds(60))
        #expect(h.ended.isEmpty, "no close: the client waits out its handshake timeout")
        #expect(h.events.contains { if case .faultFired(_, let detail) = $0 { detail.contains("never completes") } else { false } })
        #expect(h.events.contains { if case .dropped(.up, let count, _) = $0 { count == Self.clientHello.count } else { false } })
    }

    @Test("plain HTTP passes untouched")
    func plainHTTPPasses() {
        var h = MachineHarness(faults: [.tlsStall])
        h.receive("GET / HTTP/1.1\r\n\r\n", from: .client)
        #expect(h.text(.upstream) == "GET / HTTP/1.1\r\n\r\n")
        h.receive("HTTP/1.1 200 OK\r\n\r\n", from: .upstream)
        #expect(h.text(.client) == "HTTP/1.1 200 OK\r\n\r\n")
    }

    @Test("TLS already past its handshake when the fault arrives keeps flowing")
    func anEstablishedSessionIsNotStalled() {
        var h = MachineHarness()
        h.apply(.tlsStall)
        let applicationData: [UInt8] = [0x17, 0x03, 0x03, 0x00, 0x02, 0xaa, 0xbb]
        h.receive(applicationData, from: .client)
        #expect(h.sent[.upstream] == applicationData)
    }
}
