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
    /// The namespace's current addresses (a `handover` moves it within its plan).
    public private(set) var client: IPv4Address
    public private(set) var client6: IPv6Address

    public init(plan: PacketAddressPlan) {
        self.plan = plan
        (client, client6) = plan.clientAddresses(afterHandovers: 0)
    }

    /// From now on the namespace's packets come from, and go to, these addresses only.
    public mutating func move(to addresses: (v4: IPv4Address, v6: IPv6Address)) {
        (client, client6) = addresses
    }

    /// The packet's header when it may pass in `direction` (up = out of the namespace).
    public func check(_ packet: UnsafeRawBufferPointer, direction: Direction) -> Result<IPHeader, FilterRejection> {
        guard let header = IPHeader(packet) else { return .failure(.notIP) }
        let fromClient: Bool, toClient: Bool
        switch header {
        case .v4(let v4):
            fromClient = v4.source == client && v4.destination == plan.host
            toClient = v4.source == plan.host && v4.destination == client
        case .v6(let source, let destination):
            fromClient = source == client6 && destination == plan.host6
            toClient = source == plan.host6 && destination == client6
        }
        switch direction {
        case .up: return fromClient ? .success(header) : .failure(.notForHost)
        case .down: return toClient ? .success(header) : .failure(.notFromHost)
        }
    }
}
