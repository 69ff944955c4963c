import NetsimCore
import NetsimPacket
@testable import NetsimPcap
import Testing

/// What a packet link records of the client's connections: opened at a fresh SYN (not at the
/// kernel's SYN retries), half-closed at a FIN, closed at a reset or the second FIN.
@Suite("Connection observer")
struct ConnectionObserverTests {
    let client = PacketEndpoint(address: [198, 18, 0, 2], port: 40000)
    let host = PacketEndpoint(address: [198, 18, 0, 1], port: 8080)

    func observe(_ observer: inout ConnectionObserver, _ packet: [UInt8], _ direction: Direction = .up) -> (id: ConnectionID, change: ConnectionObserver.Change)? {
        packet.withUnsafeBytes { bytes in
            guard let header = IPHeader(bytes) else { return nil }
            return observer.observe(bytes, header: header, direction: direction)
        }
    }

    func data(from source: PacketEndpoint, to destination: PacketEndpoint, seq: UInt32, _ count: Int) -> [UInt8] {
        [UInt8](repeating: 7, count: count).withUnsafeBytes { payload in
            SyntheticPacket.tcp(from: source, to: destination, seq: seq, ack: 1, flags: [.ack], window: 100, ipID: 0, payload: payload)
        }
    }

    @Test func aConnectionOpensAtItsFirstSYNAndClosesAtTheSecondFINWithItsBytes() throws {
        var observer = ConnectionObserver()
        let syn = TCPSegment.bare(from: client, to: host, seq: 1000, ack: 0, flags: [.syn])
        let first = try #require(observe(&observer, syn))
        #expect(first.id == ConnectionID(1))
        #expect(first.change == .opened(client: Endpoint(host: "198.18.0.2", port: 40000)))
        #expect(observe(&observer, syn) == nil, "the kernel's SYN retry is the same connection")
        #expect(observe(&observer, TCPSegment.bare(from: host, to: client, seq: 5000, ack: 1001, flags: [.syn, .ack]), .down) == nil)
        #expect(observe(&observer, data(from: client, to: host, seq: 1001, 100)) == nil)
        #expect(observe(&observer, data(from: host, to: client, seq: 5001, 1400), .down) == nil)
        #expect(observe(&observer, data(from: host, to: client, seq: 5001, 1400), .down) == nil, "a retransmission")
        #expect(observe(&observer, data(from: host, to: client, seq: 6401, 600), .down) == nil)
        let fin = try #require(observe(&observer, TCPSegment.bare(from: host, to: client, seq: 7001, ack: 1101, flags: [.fin, .ack]), .down))
        #expect(fin.id == ConnectionID(1) && fin.change == .halfClosed(by: .upstream))
        let closed = try #require(observe(&observer, TCPSegment.bare(from: client, to: host, seq: 1101, ack: 7002, flags: [.fin, .ack])))
        #expect(closed.change == .closed(by: .upstream, how: .fin, upBytes: 100, downBytes: 2000))
        // The same port again with a new initial sequence number: the app's next connection.
        #expect(observe(&observer, TCPSegment.bare(from: client, to: host, seq: 9000, ack: 0, flags: [.syn]))?.id == ConnectionID(2))
        let reset = try #require(observe(&observer, TCPSegment.bare(from: host, to: client, seq: 0, ack: 9001, flags: [.rst, .ack]), .down))
        #expect(reset == (ConnectionID(2), .closed(by: .upstream, how: .rst, upBytes: 0, downBytes: 0)))
        #expect(observe(&observer, TCPSegment.bare(from: client, to: host, seq: 9001, ack: 1, flags: [.ack])) == nil, "forgotten once closed")
        // Closed once: the resets a kernel sends after (to each late segment) close nothing more
        // (QA 64: one FIN close, then four RST closes of the same connection).
        #expect(observe(&observer, TCPSegment.bare(from: host, to: client, seq: 0, ack: 9001, flags: [.rst, .ack]), .down) == nil)
        #expect(observe(&observer, TCPSegment.bare(from: client, to: host, seq: 7000, ack: 0, flags: [.syn]))?.id == ConnectionID(3))
        _ = observe(&observer, TCPSegment.bare(from: host, to: client, seq: 100, ack: 7001, flags: [.fin, .ack]), .down)
        #expect(observe(&observer, TCPSegment.bare(from: client, to: host, seq: 7001, ack: 101, flags: [.fin, .ack]))?.change == .closed(by: .upstream, how: .fin, upBytes: 0, downBytes: 0))
        #expect(observe(&observer, TCPSegment.bare(from: host, to: client, seq: 101, ack: 7002, flags: [.rst]), .down) == nil, "closed by FIN, not again by a late reset")
    }

    @Test func itFollowsABoundedNumberOfConnections() {
        var observer = ConnectionObserver()
        var port = client
        for n in 0...ConnectionObserver.capacity {
            port.port = UInt16(10000 + n)
            #expect(observe(&observer, TCPSegment.bare(from: port, to: host, seq: 1, ack: 0, flags: [.syn])) != nil)
        }
        // Connections followed at most: the oldest was forgotten, so its FIN changes nothing.
        port.port = 10000
        #expect(observe(&observer, TCPSegment.bare(from: port, to: host, seq: 2, ack: 1, flags: [.fin, .ack])) == nil)
        port.port = UInt16(10000 + ConnectionObserver.capacity)
        #expect(observe(&observer, TCPSegment.bare(from: port, to: host, seq: 2, ack: 1, flags: [.fin, .ack]))?.change == .halfClosed(by: .client))
    }
}
