import NetsimCore

/// What one direction of a flow shows.
public struct DirectionProfile: Sendable {
    /// Distinct payload bytes (each byte once, retransmissions not counted again), by the
    /// segments' own lengths: bytes a short snaplen kept out of the file count too.
    public var bytes = 0
    /// Bytes of the stream after the first data segment, up to the highest byte seen (by
    /// sequence numbers: bytes the capture never saw between count, those before the first
    /// captured segment do not). The rates count these over the time from that segment to the
    /// last (n segments' times span n − 1 gaps).
    var bytesAfterFirstSegment = 0
    /// Segments carrying data, retransmissions included.
    public var dataSegments = 0
    /// As Wireshark counts them: tcp.analysis.retransmission (fast and spurious included).
    public var retransmissions = 0
    public var fastRetransmissions = 0
    public var spuriousRetransmissions = 0
    public var outOfOrder = 0
    /// Gaps before a segment: data the capture never saw.
    public var notCaptured = 0
    /// Duplicate ACKs this side sent (they signal loss in the other direction).
    public var duplicateAcks = 0
    /// Time from this side's data to the other side's ACK of it (Karn: never for retransmitted data).
    public var ackRTT: [Int64] = []
    public var firstData: Int64?
    public var lastData: Int64?
    /// Bits per second from the first to the last data segment (the bytes after the first
    /// segment, as ``burstThroughput`` counts them, so the two agree when there is no idle gap).
    public var averageThroughput: Double?
    /// Bits per second inside bursts (idle gaps left out): a lower bound of the path's rate.
    public var burstThroughput: Double?
    /// Bytes of the largest burst.
    public var largestBurst = 0

    /// Retransmissions that were not spurious, per data segment: the loss estimate.
    public var lossRate: Double {
        dataSegments == 0 ? 0 : Double(retransmissions - spuriousRetransmissions) / Double(dataSegments)
    }
}

/// How a flow ended: who sent the first FIN or RST, and what the other side did.
public struct CloseSummary: Sendable, Equatable {
    public struct Step: Sendable, Equatable {
        public var fromClient: Bool
        public var kind: CloseKind
        public var time: Int64
    }
    public var first: Step?
    public var second: Step?
    /// Silence before the first FIN/RST.
    public var idleBefore: Int64 = 0

    public var description: String {
        guard let first else { return "still open at the end of the capture" }
        func name(_ step: Step) -> String { "\(step.fromClient ? "client" : "server") \(step.kind.rawValue.uppercased())" }
        var text = name(first) + " first"
        if idleBefore >= 1_000_000_000 { text += " after \(formatMilliseconds(idleBefore)) idle" }
        if let second { text += ", then \(name(second))" } else if first.kind == .fin { text += "; the \(first.fromClient ? "server" : "client") never closed in the capture" }
        return text
    }
}

/// The network a flow went through, inferred from its packets: round trip, throughput, loss,
/// idle gaps and the close. `netsim profile` prints it; `--scn` turns it into a link block.
public struct FlowProfile: Sendable {
    public var flow: Int
    public var client: PacketEndpoint
    public var server: PacketEndpoint
    public var packets: Int
    public var duration: Int64
    public var clientFromHandshake: Bool
    /// SYN to the ACK of the SYN-ACK: one full round trip wherever the capture was taken.
    public var handshakeRTT: Int64?
    public var synToSynAck: Int64?
    public var synAckToAck: Int64?
    public var toServer = DirectionProfile()
    public var toClient = DirectionProfile()
    /// The flow's first packet's time (nanoseconds since the epoch).
    public var startTime: Int64
    /// Silences longer than ``idleThreshold``: (start relative to the flow's first packet, length).
    /// Measured from the latest time seen, so a packet stamped back in time makes no gap.
    public var idleGaps: [(start: Int64, length: Int64)] = []
    public var close = CloseSummary()
    /// "HTTP (5 exchanges)" or "raw".
    public var application: String

    public static let idleThreshold: Int64 = 1_000_000_000

    public init(_ flow: TCPFlow) {
        let analysis = SequenceAnalysis(flow)
        self.flow = flow.number
        client = flow.client
        server = flow.server
        packets = flow.packets.count
        startTime = flow.firstTime
        duration = flow.lastTime - flow.firstTime
        clientFromHandshake = flow.clientFromHandshake
        // A time that comes out negative crossed a clock step (Capture.stampedBackwards): left out.
        handshakeRTT = analysis.initialRTT.flatMap { $0 >= 0 ? $0 : nil }
        if let syn = flow.packets.first(where: { $0.flags.contains(.syn) && !$0.flags.contains(.ack) }),
           let synAck = flow.packets.first(where: { $0.flags.contains([.syn, .ack]) }), synAck.time >= syn.time {
            synToSynAck = synAck.time - syn.time
            if let rtt = handshakeRTT, rtt >= synAck.time - syn.time { synAckToAck = rtt - (synAck.time - syn.time) }
        }
        switch Conversation(flow) {
        case .http(let exchanges): application = "HTTP (\(exchanges.count) exchange\(exchanges.count == 1 ? "" : "s"))"
        case .raw: application = "not HTTP"
        }
        toServer = Self.direction(flow, analysis, fromClient: true)
        toClient = Self.direction(flow, analysis, fromClient: false)
        // The reassembled stream holds never-captured bytes as zeros; those cut off the end of
        // a stream by the snaplen are counted apart. Both crossed the wire.
        toServer.bytes = flow.request.bytes.count + flow.request.missingAtEnd
        toClient.bytes = flow.response.bytes.count + flow.response.missingAtEnd
        for d in [\FlowProfile.toServer, \FlowProfile.toClient] {
            let direction = self[keyPath: d]
            if let first = direction.firstData, let last = direction.lastData, last > first {
                self[keyPath: d].averageThroughput = Double(direction.bytesAfterFirstSegment) * 8 / (Double(last - first) / 1e9)
            }
        }
        var latest = flow.firstTime
        for packet in flow.packets.dropFirst() {
            if packet.time - latest >= Self.idleThreshold { idleGaps.append((latest - flow.firstTime, packet.time - latest)) }
            latest = max(latest, packet.time)
        }
        close = Self.close(flow)
    }

    private static func direction(_ flow: TCPFlow, _ analysis: SequenceAnalysis, fromClient: Bool) -> DirectionProfile {
        var d = DirectionProfile()
        var outstanding: [(end: UInt32, time: Int64, clean: Bool)] = []
        var bursts: [(bytes: Int, first: Int, start: Int64, end: Int64)] = []
        /// The sequence number after the highest byte seen: a segment beyond it had bytes before
        /// it that the capture never saw, sent in its burst (the average counts them too).
        var next: UInt32?
        var firstEnd: UInt32?
        for (packet, flags) in zip(flow.packets, analysis.flags) {
            if packet.fromClient == fromClient {
                if flags.contains(.duplicateAck) { d.duplicateAcks += 1 }
                guard packet.payloadLength > 0 else { continue }
                d.dataSegments += 1
                if flags.contains(.retransmission) { d.retransmissions += 1 }
                if flags.contains(.fastRetransmission) { d.fastRetransmissions += 1 }
                if flags.contains(.spuriousRetransmission) { d.spuriousRetransmissions += 1 }
                if flags.contains(.outOfOrder) { d.outOfOrder += 1 }
                if flags.contains(.previousNotCaptured) { d.notCaptured += 1 }
                d.firstData = d.firstData ?? packet.time
                d.lastData = packet.time
                let end = packet.seq &+ UInt32(truncatingIfNeeded: packet.payloadLength)
                if firstEnd == nil { firstEnd = end }
                var unseen = 0
                if let expected = next, seqGreater(packet.seq, expected) { unseen = Int(packet.seq &- expected) }
                if next.map({ seqGreater(end, $0) }) ?? true { next = end }
                if flags.isDisjoint(with: [.retransmission, .outOfOrder]) {
                    outstanding.append((end, packet.time, true))
                } else {
                    for i in outstanding.indices where !seqGreater(packet.seq, outstanding[i].end) { outstanding[i].clean = false }
                }
                if let last = bursts.last, packet.time - last.end < idleThreshold {
                    bursts[bursts.count - 1].bytes += unseen + packet.payloadLength
                    bursts[bursts.count - 1].end = packet.time
                } else {
                    bursts.append((unseen + packet.payloadLength, unseen + packet.payloadLength, packet.time, packet.time))
                }
            } else if packet.flags.contains(.ack) {
                // The ACK that first covers a segment's end times that segment.
                while let head = outstanding.first, !seqGreater(head.end, packet.ack) {
                    if head.end == packet.ack, head.clean, packet.time >= head.time { d.ackRTT.append(packet.time - head.time) }
                    outstanding.removeFirst()
                }
            }
        }
        if let firstEnd, let next, seqGreater(next, firstEnd) { d.bytesAfterFirstSegment = Int(next &- firstEnd) }
        var burstBytes = 0
        var burstTime: Int64 = 0
        for burst in bursts where burst.end > burst.start {
            burstBytes += burst.bytes - burst.first
            burstTime += burst.end - burst.start
        }
        if burstTime > 0 { d.burstThroughput = Double(burstBytes) * 8 / (Double(burstTime) / 1e9) }
        d.largestBurst = bursts.map(\.bytes).max() ?? 0
        return d
    }

    private static func close(_ flow: TCPFlow) -> CloseSummary {
        var summary = CloseSummary()
        for (index, packet) in flow.packets.enumerated() where !packet.flags.isDisjoint(with: [.fin, .rst]) {
            let step = CloseSummary.Step(fromClient: packet.fromClient, kind: packet.flags.contains(.rst) ? .rst : .fin, time: packet.time)
            if summary.first == nil {
                summary.first = step
                summary.idleBefore = index > 0 ? packet.time - flow.packets[index - 1].time : 0
            } else if step.fromClient != summary.first!.fromClient || step.kind != summary.first!.kind && step.kind == .rst {
                summary.second = step
                break
            }
        }
        return summary
    }
}

/// The median of a set of samples (nil when empty).
func median(_ values: [Int64]) -> Int64? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}
