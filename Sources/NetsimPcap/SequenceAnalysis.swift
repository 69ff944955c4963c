/// What Wireshark's TCP analysis would say about a packet.
public struct PacketFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let retransmission = PacketFlags(rawValue: 1 << 0)
    public static let fastRetransmission = PacketFlags(rawValue: 1 << 1)
    public static let spuriousRetransmission = PacketFlags(rawValue: 1 << 2)
    public static let outOfOrder = PacketFlags(rawValue: 1 << 3)
    public static let duplicateAck = PacketFlags(rawValue: 1 << 4)
    /// A gap before this segment: the previous segment was not captured.
    public static let previousNotCaptured = PacketFlags(rawValue: 1 << 5)
    public static let keepAlive = PacketFlags(rawValue: 1 << 6)
    public static let windowUpdate = PacketFlags(rawValue: 1 << 7)
}

/// Classifies each packet of a flow the way Wireshark's `tcp.analysis.*` does (the same rules,
/// in the same order, from packet-tcp.c), so that `netsim profile` and tshark count
/// retransmissions, out-of-order segments and duplicate ACKs alike on the same file.
///
/// Retransmission: data that does not advance the sequence number. Fast retransmission: one
/// that follows two or more duplicate ACKs for its sequence number within 20 ms. Out-of-order:
/// one that arrives within the handshake RTT (3 ms when unknown) of the highest segment.
/// Spurious: one the receiver had already acknowledged.
public struct SequenceAnalysis: Sendable {
    public var flags: [PacketFlags]
    /// Handshake RTT as Wireshark's iRTT: SYN to the ACK of the SYN-ACK.
    public var initialRTT: Int64?

    private struct Side {
        var nextSeq: UInt32?
        var nextSeqTime: Int64 = 0
        var lastAck: UInt32?
        var lastAckTime: Int64 = 0
        var window: UInt16?
        var duplicateAcks = 0
    }

    public init(_ flow: TCPFlow) {
        var sides = [Side(), Side()]  // 0: from the client, 1: from the server
        var flags: [PacketFlags] = []
        flags.reserveCapacity(flow.packets.count)
        var synTime: Int64?
        var synAckSeen = false
        var initialRTT: Int64?
        for packet in flow.packets {
            let f = packet.fromClient ? 0 : 1
            let r = 1 - f
            let seq = packet.seq
            let length = UInt32(truncatingIfNeeded: packet.payloadLength)
            let control = !packet.flags.isDisjoint(with: [.syn, .fin, .rst])
            var result: PacketFlags = []

            if packet.flags.contains(.syn), !packet.flags.contains(.ack), synTime == nil { synTime = packet.time }
            if packet.flags.contains([.syn, .ack]) { synAckSeen = true }
            if initialRTT == nil, synAckSeen, let synTime, packet.fromClient, packet.flags.contains(.ack), !control {
                initialRTT = packet.time - synTime
            }

            if let next = sides[f].nextSeq, seqGreater(seq, next), !packet.flags.contains(.rst) {
                result.insert(.previousNotCaptured)
            }
            if length <= 1, !control, let next = sides[f].nextSeq, seq == next &- 1 {
                result.insert(.keepAlive)
            }
            let pureAck = length == 0 && !control && packet.window != 0 && seq == sides[f].nextSeq && packet.ack == sides[f].lastAck
            if pureAck, let window = sides[f].window, window != packet.window {
                result.insert(.windowUpdate)
            }
            if pureAck, packet.window == sides[f].window {
                sides[f].duplicateAcks += 1
                result.insert(.duplicateAck)
            }

            if length > 0 || packet.flags.contains(.syn) || packet.flags.contains(.fin), !result.contains(.keepAlive) {
                let notAdvanced = sides[f].nextSeq.map { seqLess(seq, $0) } ?? false
                let sinceDupAck = packet.time - sides[r].lastAckTime
                // Unsigned, as Wireshark's: a packet stamped before the highest one (a capture
                // whose timestamps go back) is not "soon after" it.
                let sinceHighest = packet.time - sides[f].nextSeqTime
                let threshold = initialRTT ?? 3_000_000
                // Data the other side has acknowledged already is spurious, however soon it came
                // (as tshark 4.0 marks it): never out of order.
                let alreadyAcked = length > 0 && sides[r].lastAck.map { !seqGreater(seq &+ length, $0) } ?? false
                if notAdvanced, sides[r].duplicateAcks >= 2, sides[r].lastAck == seq, sinceDupAck < 20_000_000 {
                    result.formUnion([.fastRetransmission, .retransmission])
                } else if notAdvanced, UInt64(bitPattern: sinceHighest) < UInt64(threshold), sides[f].nextSeq != seq &+ length, !alreadyAcked {
                    result.insert(.outOfOrder)
                } else if alreadyAcked {
                    result.formUnion([.spuriousRetransmission, .retransmission])
                } else if notAdvanced {
                    result.insert(.retransmission)
                }
            }

            if length > 0 || packet.flags.contains(.syn) || packet.flags.contains(.fin) {
                let next = seq &+ length &+ (packet.flags.contains(.syn) || packet.flags.contains(.fin) ? 1 : 0)
                if sides[f].nextSeq.map({ seqGreater(next, $0) }) ?? true {
                    sides[f].nextSeq = next
                    sides[f].nextSeqTime = packet.time
                }
            }
            sides[f].window = packet.window
            if packet.flags.contains(.ack) {
                sides[f].lastAck = packet.ack
                sides[f].lastAckTime = packet.time
            }
            if !result.contains(.duplicateAck) { sides[f].duplicateAcks = 0 }
            flags.append(result)
        }
        self.flags = flags
        self.initialRTT = initialRTT
    }

    public func count(_ flag: PacketFlags, fromClient: Bool? = nil, in flow: TCPFlow) -> Int {
        zip(flow.packets, flags).filter { packet, flags in
            flags.contains(flag) && (fromClient == nil || packet.fromClient == fromClient)
        }.count
    }
}

/// Sequence-number order modulo 2³² (RFC 1982).
func seqLess(_ a: UInt32, _ b: UInt32) -> Bool { Int32(bitPattern: a &- b) < 0 }
func seqGreater(_ a: UInt32, _ b: UInt32) -> Bool { Int32(bitPattern: a &- b) > 0 }
