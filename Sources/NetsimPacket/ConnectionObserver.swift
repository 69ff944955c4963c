import DequeModule
import NetsimCore
import NetsimPcap

/// The TCP connections the client inside the namespace begins, as the packet path sees them:
/// each fresh SYN (a new client port, or a new initial sequence number on a reused one) is one
/// connection, numbered in order; the kernel's own SYN retransmissions are not.
///
/// What the relay records as `opened` when it accepts, a packet link records at the client's
/// first SYN — before any fault or loss decides its fate — so "how many connections did the
/// client open, and when" means the same in both modes (a scenario's `relay:` checks, a
/// request's `connection: new`). A pure state machine, bounded: it remembers the most recent
/// ``capacity`` SYNs, far more than a kernel retries at once.
public struct ConnectionObserver: Sendable {
    private struct Attempt: Hashable, Sendable {
        var client: PacketEndpoint
        var server: PacketEndpoint
        var initialSequence: UInt32
    }

    public static let capacity = 4096
    private var known: Set<Attempt> = []
    private var order: Deque<Attempt> = []
    private var next: UInt64 = 1

    public init() {}

    /// A connection the client began with `packet` (travelling up, from the namespace), or nil
    /// when it is not a first SYN.
    public mutating func observe(_ packet: UnsafeRawBufferPointer, header: IPHeader) -> (id: ConnectionID, client: Endpoint)? {
        guard Self.isBareSYN(packet, header: header), let segment = TCPSegment(ipPacket: [UInt8](packet)) else { return nil }
        let attempt = Attempt(client: segment.source, server: segment.destination, initialSequence: segment.seq)
        guard known.insert(attempt).inserted else { return nil }
        order.append(attempt)
        if order.count > Self.capacity, let oldest = order.popFirst() { known.remove(oldest) }
        defer { next += 1 }
        return (ConnectionID(next), Endpoint(host: IPAddressText.format(segment.source.address), port: Int(segment.source.port)))
    }

    /// TCP with SYN set and ACK clear, read from the header bytes alone (most packets are not).
    static func isBareSYN(_ packet: UnsafeRawBufferPointer, header: IPHeader) -> Bool {
        let start = header.headerLength
        let protocolNumber: UInt8
        switch header {
        case .v4(let v4): protocolNumber = v4.protocolNumber
        case .v6: protocolNumber = packet.count > 6 ? packet[6] : 0
        }
        guard protocolNumber == 6, packet.count >= start + 14 else { return false }
        let flags = packet[start + 13]
        return flags & 0x02 != 0 && flags & 0x10 == 0
    }
}
