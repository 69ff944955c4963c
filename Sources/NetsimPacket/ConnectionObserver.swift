import NetsimCore
import NetsimPcap

/// The TCP connections the client inside the namespace makes, as the packet path sees them —
/// what the relay records of the connections it carries, in the same events:
///
/// - `opened` at the client's first SYN (a new client port, or a new initial sequence number on
///   a reused one), before any fault or loss decides its fate; the kernel's own SYN
///   retransmissions are the same connection;
/// - `halfClosed` at each side's first FIN;
/// - `closed` at a reset (either way), or when both sides have sent FIN, with the bytes each way
///   (sequence space covered, so retransmissions count once).
///
/// So "how many connections did the client open, and when" means the same in both modes (a
/// scenario's `relay:` checks, a request's `connection: new`), and every close is in the log.
/// A pure state machine fed each packet as it crosses; bounded: it follows at most
/// ``capacity`` connections, forgetting the oldest.
public struct ConnectionObserver: Sendable {
    /// What happened to a connection.
    public enum Change: Equatable, Sendable {
        case opened(client: Endpoint)
        case halfClosed(by: Side)
        case closed(by: Side, how: CloseKind, upBytes: Int, downBytes: Int)
    }

    private struct Key: Hashable, Sendable {
        var client: [UInt8]
        var clientPort: UInt16
        var serverPort: UInt16
    }

    private struct Connection: Sendable {
        var id: ConnectionID
        var key: Key
        var clientISN: UInt32
        var serverISN: UInt32?
        var upBytes = 0
        var downBytes = 0
        var finFrom: Set<Direction> = []
        var firstFIN: Side?
    }

    public static let capacity = 4096
    private var connections: [Key: Connection] = [:]
    /// Keys in the order their connections opened (the oldest is forgotten first).
    private var order: [Key] = []
    private var next: UInt64 = 1

    public init() {}

    /// What `packet`, travelling `direction` (up: from the namespace), changes; nil for most.
    public mutating func observe(_ packet: UnsafeRawBufferPointer, header: IPHeader, direction: Direction) -> (id: ConnectionID, change: Change)? {
        guard let segment = TCPHeaderView(packet, header: header) else { return nil }
        let up = direction == .up
        let key = Key(client: up ? segment.sourceAddress : segment.destinationAddress,
                      clientPort: up ? segment.sourcePort : segment.destinationPort,
                      serverPort: up ? segment.destinationPort : segment.sourcePort)
        if up, segment.flags & TCPHeaderView.syn != 0, segment.flags & TCPHeaderView.ack == 0 {
            if let known = connections[key], known.clientISN == segment.sequence { return nil }  // a SYN retry
            return open(key, isn: segment.sequence)
        }
        guard var connection = connections[key] else { return nil }
        // Written back unless it ended here (`forget`): put back, a closed connection closed again
        // on each later segment (QA 64: one FIN close, then four RST closes in the event log).
        defer { if connections[key] != nil { connections[key] = connection } }
        if !up, segment.flags & TCPHeaderView.syn != 0 { connection.serverISN = segment.sequence }
        let covered = segment.payloadLength + (segment.flags & TCPHeaderView.fin != 0 ? 1 : 0)
        if let isn = up ? connection.clientISN : connection.serverISN, covered > 0 {
            let offset = segment.sequence &- isn &- 1
            if offset < 1 << 31 {
                let end = Int(offset) + segment.payloadLength
                if up { connection.upBytes = max(connection.upBytes, end) } else { connection.downBytes = max(connection.downBytes, end) }
            }
        }
        let side: Side = up ? .client : .upstream
        if segment.flags & TCPHeaderView.rst != 0 {
            forget(key)
            return (connection.id, .closed(by: connection.firstFIN ?? side, how: .rst, upBytes: connection.upBytes, downBytes: connection.downBytes))
        }
        guard segment.flags & TCPHeaderView.fin != 0, connection.finFrom.insert(direction).inserted else { return nil }
        if connection.finFrom.count == 2 {
            forget(key)
            return (connection.id, .closed(by: connection.firstFIN ?? side, how: .fin, upBytes: connection.upBytes, downBytes: connection.downBytes))
        }
        connection.firstFIN = side
        return (connection.id, .halfClosed(by: side))
    }

    private mutating func open(_ key: Key, isn: UInt32) -> (id: ConnectionID, change: Change) {
        if connections[key] != nil { forget(key) }
        let id = ConnectionID(next)
        next += 1
        connections[key] = Connection(id: id, key: key, clientISN: isn)
        order.append(key)
        if order.count > Self.capacity * 2 { order.removeAll { connections[$0] == nil } }
        if connections.count > Self.capacity, let oldest = order.first(where: { connections[$0] != nil }) { forget(oldest) }
        return (id, .opened(client: Endpoint(host: IPAddressText.format(key.client), port: Int(key.clientPort))))
    }

    private mutating func forget(_ key: Key) {
        connections[key] = nil
    }
}

/// A TCP segment's header fields read in place from an IP packet (no copy): most packets are
/// not a connection's start or end, and the path reads each one.
struct TCPHeaderView {
    static let fin: UInt8 = 0x01
    static let syn: UInt8 = 0x02
    static let rst: UInt8 = 0x04
    static let ack: UInt8 = 0x10

    var sourceAddress: [UInt8]
    var destinationAddress: [UInt8]
    var sourcePort: UInt16
    var destinationPort: UInt16
    var sequence: UInt32
    var flags: UInt8
    var payloadLength: Int

    /// nil unless `packet` is an unfragmented TCP segment whose headers are all there.
    init?(_ packet: UnsafeRawBufferPointer, header: IPHeader) {
        let start = header.headerLength
        let ipLength: Int
        switch header {
        case .v4(let v4):
            let fragment = (Int(packet[6]) << 8 | Int(packet[7])) & 0x3FFF  // offset or more-fragments
            guard v4.protocolNumber == 6, fragment == 0 else { return nil }
            ipLength = Int(packet[2]) << 8 | Int(packet[3])
            sourceAddress = Array(packet[12..<16])
            destinationAddress = Array(packet[16..<20])
        case .v6:
            guard packet.count >= 40, packet[6] == 6 else { return nil }
            ipLength = 40 + (Int(packet[4]) << 8 | Int(packet[5]))
            sourceAddress = Array(packet[8..<24])
            destinationAddress = Array(packet[24..<40])
        }
        guard packet.count >= start + 20, ipLength <= packet.count else { return nil }
        let tcpLength = Int(packet[start + 12] >> 4) * 4
        guard tcpLength >= 20, start + tcpLength <= ipLength else { return nil }
        sourcePort = UInt16(packet[start]) << 8 | UInt16(packet[start + 1])
        destinationPort = UInt16(packet[start + 2]) << 8 | UInt16(packet[start + 3])
        sequence = (4..<8).reduce(UInt32(0)) { $0 << 8 | UInt32(packet[start + $1]) }
        flags = packet[start + 13]
        payloadLength = ipLength - start - tcpLength
    }
}
