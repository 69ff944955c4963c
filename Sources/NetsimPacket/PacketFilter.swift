import NetsimCore

/// Why the packet path refused a packet before any impairment.
public enum FilterRejection: String, Error, Equatable, Sendable, CaseIterable {
    /// Neither an IPv4 nor an IPv6 packet (garbage, a truncated header).
    case notIP = "not-ip"
    /// Going out of the namespace to anything but NETSIM_HOST: the packet path forwards nowhere.
    case notForHost = "not-for-host"
    /// Coming into the namespace from anything but NETSIM_HOST, or addressed elsewhere.
    case notFromHost = "not-from-host"
}

/// The packet path delivers only between the namespace and NETSIM_HOST: no forwarding, no NAT,
/// nothing leaves the machine. Everything else is dropped here and counted by the caller.
public struct PacketFilter: Sendable {
    public let plan: PacketAddressPlan

    public init(plan: PacketAddressPlan) { self.plan = plan }

    /// The packet's header when it may pass in `direction` (up = out of the namespace).
    public func check(_ packet: UnsafeRawBufferPointer, direction: Direction) -> Result<IPHeader, FilterRejection> {
        guard let header = IPHeader(packet) else { return .failure(.notIP) }
        let fromClient: Bool, toClient: Bool
        switch header {
        case .v4(let v4):
            fromClient = v4.source == plan.client && v4.destination == plan.host
            toClient = v4.source == plan.host && v4.destination == plan.client
        case .v6(let source, let destination):
            fromClient = source == plan.client6 && destination == plan.host6
            toClient = source == plan.host6 && destination == plan.client6
        }
        switch direction {
        case .up: return fromClient ? .success(header) : .failure(.notForHost)
        case .down: return toClient ? .success(header) : .failure(.notFromHost)
        }
    }
}
