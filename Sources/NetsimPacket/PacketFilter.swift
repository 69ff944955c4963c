import NetsimCore

/// Why the packet path refused a packet before any impairment.
public enum FilterRejection: String, Error, Equatable, Sendable, CaseIterable {
    /// Not an IPv4 packet (IPv6 router solicitations, garbage).
    case notIPv4 = "not-ipv4"
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

    /// The packet's IPv4 header when it may pass in `direction` (up = out of the namespace).
    public func check(_ packet: UnsafeRawBufferPointer, direction: Direction) -> Result<IPv4Header, FilterRejection> {
        guard let header = IPv4Header(packet) else { return .failure(.notIPv4) }
        switch direction {
        case .up:
            guard header.destination == plan.host, header.source == plan.client else { return .failure(.notForHost) }
        case .down:
            guard header.source == plan.host, header.destination == plan.client else { return .failure(.notFromHost) }
        }
        return .success(header)
    }
}
