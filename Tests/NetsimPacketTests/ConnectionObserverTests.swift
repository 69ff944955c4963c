import NetsimCore
import NetsimPacket
import NetsimPcap
import Testing

/// What a packet link records as the client's connections: one per fresh SYN, none for the
/// kernel's SYN retransmissions or any other segment.
@Suite("Connection observer")
struct ConnectionObserverTests {
    let client = PacketEndpoint(address: [198, 18, 0, 2], port: 40000)
    let host = PacketEndpoint(address: [198, 18, 0, 1], port: 8080)

    func observe(_ observer: inout ConnectionObserver, _ packet: [UInt8]) -> (id: ConnectionID, client: Endpoint)? {
        packet.withUnsafeBytes { bytes in
            guard let header = IPHeader(bytes) else { return nil }
            return observer.observe(bytes, header: header)
        }
    }

    @Test func aFreshSYNIsAConnectionAndItsRetransmissionIsNot() throws {
        var observer = ConnectionObserver()
        let syn = TCPSegment.bare(from: client, to: host, seq: 1000, ack: 0, flags: [.syn])
        let first = try #require(observe(&observer, syn))
        #expect(first.id == ConnectionID(1))
        #expect(first.client == Endpoint(host: "198.18.0.2", port: 40000))
        #expect(observe(&observer, syn) == nil, "the kernel's SYN retry is the same attempt")
        // The handshake's other segments and data are not connections.
        #expect(observe(&observer, TCPSegment.bare(from: host, to: client, seq: 5, ack: 1001, flags: [.syn, .ack])) == nil)
        #expect(observe(&observer, TCPSegment.bare(from: client, to: host, seq: 1001, ack: 6, flags: [.ack])) == nil)
        #expect(observe(&observer, TCPSegment.bare(from: client, to: host, seq: 1001, ack: 6, flags: [.fin, .ack])) == nil)
        // The same port again with a new initial sequence number: the app's next connection.
        #expect(observe(&observer, TCPSegment.bare(from: client, to: host, seq: 9000, ack: 0, flags: [.syn]))?.id == ConnectionID(2))
        var other = client
        other.port = 40001
        #expect(observe(&observer, TCPSegment.bare(from: other, to: host, seq: 1000, ack: 0, flags: [.syn]))?.id == ConnectionID(3))
    }

    @Test func itRemembersABoundedNumberOfAttempts() {
        var observer = ConnectionObserver()
        var port = client
        for n in 0...ConnectionObserver.capacity {
            port.port = UInt16(10000 + n)
            #expect(observe(&observer, TCPSegment.bare(from: port, to: host, seq: 1, ack: 0, flags: [.syn])) != nil)
        }
        // The oldest was forgotten: its retransmission would count again (far older than any
        // kernel's SYN retries: capacity attempts later).
        port.port = 10000
        #expect(observe(&observer, TCPSegment.bare(from: port, to: host, seq: 1, ack: 0, flags: [.syn])) != nil)
        port.port = UInt16(10000 + ConnectionObserver.capacity)
        #expect(observe(&observer, TCPSegment.bare(from: port, to: host, seq: 1, ack: 0, flags: [.syn])) == nil)
    }
}
