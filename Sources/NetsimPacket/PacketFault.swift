import NetsimCore
import NetsimFaults

/// A fault of the catalog as the packet path carries it out (see each case). Faults that act on
/// byte streams or HTTP requests (``FaultPaths/relay`` only) have no packet form.
public enum PacketFault: Equatable, Sendable, CustomStringConvertible {
    /// The namespace's interface goes down: connects fail with ENETUNREACH, nothing moves.
    case offline
    /// The namespace's address changes; connections on the old one die.
    case handover
    /// Every packet vanishes, both ways: connects wait out the SYN retries.
    case blackhole
    /// UDP vanishes both ways (only to/from this host port when given); TCP passes.
    case udpBlock(port: UInt16?)
    /// The host side forgets every connection open when it starts: the client's next segment on
    /// one is answered with an RST.
    case stale

    /// The catalog's fault on the packet path; throws with the reason when it has no packet form.
    public init(_ kind: FaultKind) throws {
        self = try Self.packetForm(of: kind)
    }

    private static func packetForm(of kind: FaultKind) throws -> PacketFault {
        let name = kind.name
        if name == Offline.name { return .offline }
        if name == Handover.name { return .handover }
        if name == Blackhole.name { return .blackhole }
        if let block = kind.fault as? UDPBlock { return .udpBlock(port: block.port) }
        if let stale = kind.fault as? Stale {
            if stale.close == .fin {
                throw PacketFaultError("stale=fin is a relay fault (a relay closes its own leg with FIN); on the packet path the host side forgets the connection and answers with RST: use stale or stale=rst")
            }
            return .stale
        }
        let acts = kind.scope == .request ? "HTTP requests" : "byte streams"
        throw PacketFaultError("\(name) acts on \(acts) at a relay; netsim shell injects \(FaultCatalog.packetFaultNames) (use netsim relay --fault \(name))")
    }

    /// The name events carry.
    public var name: FaultName {
        switch self {
        case .offline: Offline.faultName
        case .handover: Handover.faultName
        case .blackhole: Blackhole.faultName
        case .udpBlock: UDPBlock.faultName
        case .stale: Stale.faultName
        }
    }

    /// Whether it happens at one instant (a duration would mean nothing).
    public var isInstant: Bool { self == .handover }

    public var description: String {
        if case .udpBlock(let port?) = self { return "udp-block=\(port)" }
        return name.rawValue
    }
}

/// A fault the packet path cannot carry out as written, with what to write instead.
public struct PacketFaultError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One fault on the shell's timeline: from `start` for `length` (nil: to the end), in
/// nanoseconds after the packet path started.
public struct ScheduledPacketFault: Equatable, Sendable, CustomStringConvertible {
    public var fault: PacketFault
    public var start: Int64
    public var length: Int64?

    /// Checks the catalog's fault and its timing.
    public init(_ timed: TimedFault) throws {
        fault = try PacketFault(timed.kind)
        start = timed.at.nanoseconds
        length = timed.lasts?.nanoseconds
        if fault.isInstant, timed.lasts != nil {
            throw PacketFaultError("\(timed.written): a handover happens at one instant; drop the +\(timed.lasts!.compactDescription) (another handover@… moves the address back)")
        }
    }

    public init(_ fault: PacketFault, start: Int64, length: Int64? = nil) {
        self.fault = fault
        self.start = start
        self.length = length
    }

    public var end: Int64? { length.map { start.addingSaturating($0) } }

    public var description: String {
        var text = fault.description
        if start > 0 { text += " at \(Duration.nanoseconds(start).compactDescription)" }
        if let length { text += " for \(Duration.nanoseconds(length).compactDescription)" }
        return text
    }
}
