/// One packet of a flow, as the analyses need it.
public struct FlowPacket: Sendable {
    public var time: Int64
    public var fromClient: Bool
    public var seq: UInt32
    public var ack: UInt32
    public var flags: TCPFlags
    public var window: UInt16
    public var payloadLength: Int
    public var capturedLength: Int
}

/// One TCP connection in a capture: its two ends, its packets in capture order, and each
/// direction's bytes put back together.
public struct TCPFlow: Sendable {
    /// 1, 2, … in the order the flows first appear: `--flow 2` picks the second.
    public var number: Int
    public var client: PacketEndpoint
    public var server: PacketEndpoint
    /// Whether the client was known from a SYN; otherwise guessed from the ports.
    public var clientFromHandshake: Bool
    public var packets: [FlowPacket] = []
    public var clientWindowScale: UInt8?
    public var serverWindowScale: UInt8?
    /// Client → server bytes.
    public var request = ReassembledStream()
    /// Server → client bytes.
    public var response = ReassembledStream()

    var toServer = StreamReassembler()
    var toClient = StreamReassembler()
    var closed = false

    init(number: Int, first: TCPSegment) {
        self.number = number
        let (client, server, known) = Self.roles(of: first)
        self.client = client
        self.server = server
        self.clientFromHandshake = known
    }

    public var description: String { "#\(number) \(client) → \(server)" }

    public var firstTime: Int64 { packets.first?.time ?? 0 }
    public var lastTime: Int64 { packets.last?.time ?? 0 }

    mutating func add(_ segment: TCPSegment) {
        let fromClient = segment.source == client
        packets.append(FlowPacket(
            time: segment.time, fromClient: fromClient, seq: segment.seq, ack: segment.ack, flags: segment.flags,
            window: segment.window, payloadLength: segment.payloadLength, capturedLength: segment.payload.count))
        if segment.flags.contains(.syn) {
            if fromClient { clientWindowScale = segment.windowScale } else { serverWindowScale = segment.windowScale }
        }
        if fromClient { toServer.add(segment) } else { toClient.add(segment) }
        if segment.flags.contains(.rst) { closed = true }
        if segment.flags.contains(.fin) {
            let finsFromBoth = packets.contains { $0.flags.contains(.fin) && $0.fromClient } && packets.contains { $0.flags.contains(.fin) && !$0.fromClient }
            if finsFromBoth { closed = true }
        }
    }

    /// Whether `segment` opens a new connection on this flow's address pair (the ports were
    /// reused): a fresh SYN after this one ended, or a SYN with another initial sequence number.
    func isNewConnection(_ segment: TCPSegment) -> Bool {
        guard segment.flags.contains(.syn), !segment.flags.contains(.ack), !packets.isEmpty else { return false }
        if closed { return true }
        if let syn = packets.first(where: { $0.flags.contains(.syn) && !$0.flags.contains(.ack) }) {
            return syn.seq != segment.seq
        }
        return packets.contains { $0.payloadLength > 0 }
    }

    mutating func finish() {
        request = toServer.assemble()
        response = toClient.assemble()
    }

    /// Who is the client: the SYN's sender; else the end with the well-known port; else the
    /// first packet's sender.
    private static func roles(of first: TCPSegment) -> (PacketEndpoint, PacketEndpoint, Bool) {
        if first.flags.contains(.syn) {
            return first.flags.contains(.ack) ? (first.destination, first.source, true) : (first.source, first.destination, true)
        }
        let s = first.source.port
        let d = first.destination.port
        let wellKnown: Set<UInt16> = [80, 443, 8080, 8000, 8443, 8888, 3128]
        if wellKnown.contains(s) && !wellKnown.contains(d) || s < 1024 && d >= 1024 {
            return (first.destination, first.source, false)
        }
        return (first.source, first.destination, false)
    }
}
