import NetsimCore

/// What the packet path did in one direction, counted as it happens.
public struct PacketDirectionCounters: Equatable, Sendable, Codable {
    /// Packets read from the sending side's TUN device.
    public var received = 0
    public var receivedBytes = 0
    /// Copies written to the receiving side (duplicates included).
    public var delivered = 0
    public var deliveredBytes = 0
    /// Refused by the filter: not between the namespace and NETSIM_HOST, or not IP.
    public var filtered = 0
    public var lost = 0
    public var queueFull = 0
    /// Extra copies made by the duplicate stage, delivered or not: `received + duplicated`
    /// copies each end delivered, in a drop counter, or in flight.
    public var duplicated = 0
    public var corrupted = 0
    public var reordered = 0
    /// The receiving TUN device would not take the packet (its queue full): dropped.
    public var writeFailed = 0
    /// Dropped by a fault (`offline`, `blackhole`, `udp-block`, `handover`, `stale`): see the event log.
    public var faultDropped = 0
    /// Still waiting for their release time when the shell ended (the namespace went away with them).
    public var inFlightAtExit = 0

    public init() {}

    /// `12 packets in, 11 delivered, 1 lost, 1 filtered`: only what is not zero after the first two.
    public var summary: String {
        var parts = ["\(received) packets in (\(receivedBytes) B)", "\(delivered) delivered"]
        for (count, name) in [(filtered, "filtered"), (lost, "lost"), (queueFull, "dropped at a full queue"),
                              (duplicated, "duplicated"), (corrupted, "corrupted"), (reordered, "reordered"),
                              (writeFailed, "refused by the device"), (faultDropped, "dropped by faults"), (inFlightAtExit, "in flight at exit")] where count > 0 {
            parts.append("\(count) \(name)")
        }
        return parts.joined(separator: ", ")
    }
}

/// Both directions, plus the filter's reasons (for the "dropped and counted" promise).
public struct PacketCounters: Equatable, Sendable, Codable {
    public var up = PacketDirectionCounters()
    public var down = PacketDirectionCounters()
    /// Packets out of the namespace to an address that is not NETSIM_HOST.
    public var notForHost = 0
    /// Neither IPv4 nor IPv6.
    public var notIP = 0
    /// RSTs netsim crafted and sent (a `stale` fault answers the client and tells the host).
    public var resetsSent = 0

    public init() {}

    public subscript(direction: Direction) -> PacketDirectionCounters {
        get { direction == .up ? up : down }
        set { if direction == .up { up = newValue } else { down = newValue } }
    }
}
