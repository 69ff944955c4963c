import NetsimCore
import NetsimFaults
import NetsimPcap

/// What a packet fault decided about one packet.
public enum PacketFaultVerdict: Equatable, Sendable {
    /// No fault touches it: on to the link.
    case pass
    /// It vanishes (counted and logged as dropped by this fault).
    case drop(FaultName)
    /// It vanishes and is answered: `toClient` goes down the link to the namespace, `toHost` up
    /// to the host side (both RSTs netsim crafted).
    case reset(FaultName, toClient: [UInt8], toHost: [UInt8], detail: String)
}

/// The packet faults in force and what they remember, deciding each packet's fate: a pure state
/// machine (no clock, no devices), fed transitions by ``PacketFaultDriver`` and packets by the path.
///
/// Faults may overlap; each kind counts how many of it are in force, so the end of one does not
/// lift another of the same kind still running.
public struct PacketFaultState: Sendable {
    public let plan: PacketAddressPlan
    private var active: [PacketFault] = []
    /// Handovers so far: the namespace's addresses are the plan's `afterHandovers:` this many.
    public private(set) var handovers = 0
    /// Connections opened (SYN seen) since `stale` started: the host side knows these.
    private var fresh: Set<FlowKey> = []
    /// Connections `stale` made the host side forget that have been answered with RST.
    private var forgotten: Set<FlowKey> = []

    public init(plan: PacketAddressPlan) { self.plan = plan }

    /// The namespace's addresses now.
    public var clientAddresses: (v4: IPv4Address, v6: IPv6Address) { plan.clientAddresses(afterHandovers: handovers) }

    public mutating func begin(_ fault: PacketFault) {
        if fault == .handover {
            handovers += 1
            return
        }
        if fault == .stale, !active.contains(.stale) {
            fresh = []
            forgotten = []
        }
        active.append(fault)
    }

    public mutating func end(_ fault: PacketFault) {
        guard let index = active.firstIndex(of: fault) else { return }
        active.remove(at: index)
    }

    public func isActive(_ fault: PacketFault) -> Bool { active.contains(fault) }

    /// No fault is acting on packets (a past handover acts only through ``judgeRefused(_:direction:)``).
    public var isQuiet: Bool { active.isEmpty }

    /// The fate of a packet the filter let through (travelling `direction`).
    public mutating func judge(_ packet: [UInt8], header: IPHeader, direction: Direction) -> PacketFaultVerdict {
        if active.isEmpty { return .pass }
        if active.contains(.offline) { return .drop(Offline.faultName) }
        if active.contains(.blackhole) { return .drop(Blackhole.faultName) }
        let transport = TransportView(packet, header: header)
        if transport.protocolNumber == 17 {
            let hostPort = direction == .up ? transport.destinationPort : transport.sourcePort
            let blocked = active.contains { fault in
                guard case .udpBlock(let port) = fault else { return false }
                return port == nil || port == hostPort
            }
            if blocked { return .drop(UDPBlock.faultName) }
        }
        if transport.protocolNumber == 6, active.contains(.stale), let segment = TCPSegment(ipPacket: packet) {
            return stale(segment, direction: direction)
        }
        return .pass
    }

    /// A packet the filter refused: one to or from an address a handover took away is the
    /// handover's (the old network swallows it); nil for any other.
    public func judgeRefused(_ header: IPHeader, direction: Direction) -> PacketFaultVerdict? {
        guard handovers > 0 else { return nil }
        let retired = plan.clientAddresses(afterHandovers: handovers + 1)
        switch header {
        case .v4(let v4):
            if (direction == .up ? v4.source : v4.destination) == retired.v4 { return .drop(Handover.faultName) }
        case .v6(let source, let destination):
            if (direction == .up ? source : destination) == retired.v6 { return .drop(Handover.faultName) }
        }
        return nil
    }

    /// RFC 9293 §3.10.7.1 (a segment for a connection that does not exist): the answer's
    /// sequence number is the segment's acknowledgment, or, without ACK, zero with an ACK of
    /// everything the segment occupied. The host side's RST carries the segment's own sequence
    /// number, which is the host's next expected one, so its kernel accepts it (RFC 5961 §3.2).
    private mutating func stale(_ segment: TCPSegment, direction: Direction) -> PacketFaultVerdict {
        let key = FlowKey(segment, direction: direction)
        if direction == .down {
            return forgotten.contains(key) ? .drop(Stale.faultName) : .pass
        }
        if segment.flags.contains(.syn), !segment.flags.contains(.ack) {
            fresh.insert(key)
            forgotten.remove(key)
            return .pass
        }
        if fresh.contains(key) { return .pass }
        forgotten.insert(key)
        if segment.flags.contains(.rst) { return .drop(Stale.faultName) }
        let hasAck = segment.flags.contains(.ack)
        let toClient = TCPSegment.bare(from: segment.destination, to: segment.source,
                                       seq: hasAck ? segment.ack : 0, ack: hasAck ? 0 : segment.seq &+ segment.sequenceLength,
                                       flags: hasAck ? [.rst] : [.rst, .ack])
        let toHost = TCPSegment.bare(from: segment.source, to: segment.destination, seq: segment.seq, ack: 0, flags: [.rst])
        let detail = "the host side forgot \(segment.source) → \(segment.destination): RST to the client (seq \(hasAck ? segment.ack : 0)) and to the host (seq \(segment.seq))"
        return .reset(Stale.faultName, toClient: toClient, toHost: toHost, detail: detail)
    }
}

/// One connection as the client sees it: its address and port, the host's port.
struct FlowKey: Hashable, Sendable {
    var client: PacketEndpoint
    var hostPort: UInt16

    init(_ segment: TCPSegment, direction: Direction) {
        client = direction == .up ? segment.source : segment.destination
        hostPort = direction == .up ? segment.destination.port : segment.source.port
    }
}

/// The transport protocol and ports of an IP packet, without copying it (UDP and TCP put their
/// ports first). Ports are 0 when the packet is a later fragment, has IPv6 extension headers, or
/// is too short.
struct TransportView {
    var protocolNumber: UInt8
    var sourcePort: UInt16 = 0
    var destinationPort: UInt16 = 0

    init(_ packet: [UInt8], header: IPHeader) {
        let start = header.headerLength
        switch header {
        case .v4(let v4):
            protocolNumber = v4.protocolNumber
            let fragmentOffset = (Int(packet[6]) << 8 | Int(packet[7])) & 0x1FFF
            guard fragmentOffset == 0 else { return }
        case .v6:
            protocolNumber = packet[6]
        }
        guard packet.count >= start + 4 else { return }
        sourcePort = UInt16(packet[start]) << 8 | UInt16(packet[start + 1])
        destinationPort = UInt16(packet[start + 2]) << 8 | UInt16(packet[start + 3])
    }
}
