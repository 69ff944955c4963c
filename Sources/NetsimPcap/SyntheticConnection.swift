/// One TCP conversation as it would look on the wire, made up from what the relay saw: a
/// three-way handshake, data segments each followed by the receiver's ACK, and FIN or RST as they
/// happened.
///
/// The relay sees socket calls, not packets, so each batch of bytes becomes segments of at most
/// ``SyntheticPacket/maximumPayload`` bytes, acknowledged at once by the other end. Sequence
/// and acknowledgement numbers stay consistent, so Wireshark's TCP analysis finds nothing to flag
/// in a clean run.
struct SyntheticConnection {
    enum Role: Int { case initiator = 0, responder = 1 }

    let ends: [PacketEndpoint]  // indexed by Role
    private var nextSeq: [UInt32]
    private var nextIPID: [UInt16] = [1, 1]
    private var finished: [Bool] = [false, false]
    /// A reset ends the conversation: nothing is written for it afterwards.
    private(set) var reset = false

    init(initiator: PacketEndpoint, responder: PacketEndpoint, initialSequence: UInt32) {
        ends = [initiator, responder]
        nextSeq = [initialSequence, initialSequence &+ 0x1000_0000]
    }

    var isOver: Bool { reset || (finished[0] && finished[1]) }

    /// SYN, SYN-ACK, ACK.
    mutating func handshake() -> [[UInt8]] {
        let syn = packet(.initiator, flags: .syn, options: SyntheticPacket.synOptions)
        nextSeq[0] &+= 1
        let synAck = packet(.responder, flags: [.syn, .ack], options: SyntheticPacket.synOptions)
        nextSeq[1] &+= 1
        return [syn, synAck, packet(.initiator, flags: .ack)]
    }

    /// `bytes` from `sender`, cut into segments, then the other end's ACK.
    mutating func data(from sender: Role, _ bytes: UnsafeRawBufferPointer) -> [[UInt8]] {
        guard !reset, !finished[sender.rawValue], bytes.count > 0 else { return [] }
        var packets: [[UInt8]] = []
        var offset = 0
        while offset < bytes.count {
            let length = min(SyntheticPacket.maximumPayload, bytes.count - offset)
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
            let last = offset + length == bytes.count
            packets.append(packet(sender, flags: last ? [.psh, .ack] : .ack, payload: slice))
            nextSeq[sender.rawValue] &+= UInt32(length)
            offset += length
        }
        packets.append(packet(sender.other, flags: .ack))
        return packets
    }

    /// FIN from `sender` and the other end's ACK of it.
    mutating func fin(from sender: Role) -> [[UInt8]] {
        guard !reset, !finished[sender.rawValue] else { return [] }
        let fin = packet(sender, flags: [.fin, .ack])
        nextSeq[sender.rawValue] &+= 1
        finished[sender.rawValue] = true
        return [fin, packet(sender.other, flags: .ack)]
    }

    /// RST (with ACK, as Linux sends when it aborts an established connection) from `sender`.
    mutating func rst(from sender: Role) -> [[UInt8]] {
        guard !reset, !(finished[0] && finished[1]) else { return [] }
        reset = true
        return [packet(sender, flags: [.rst, .ack], window: 0)]
    }

    private mutating func packet(
        _ sender: Role, flags: TCPFlags, window: UInt16 = 0xffff, options: [UInt8] = [],
        payload: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)
    ) -> [UInt8] {
        let s = sender.rawValue
        defer { nextIPID[s] &+= 1 }
        return SyntheticPacket.tcp(
            from: ends[s], to: ends[1 - s], seq: nextSeq[s], ack: nextSeq[1 - s], flags: flags,
            window: window, options: options, ipID: nextIPID[s], payload: payload)
    }
}

extension SyntheticConnection.Role {
    var other: Self { self == .initiator ? .responder : .initiator }
}
