import NetsimCore
import NetsimLink

/// One direction of a link as a packet path applies it: the relay's settings (latency, jitter,
/// rate, loss; ``DirectionLink``) plus what only whole packets can have.
///
/// Loss here is real: a lost packet never reaches the far kernel, whose own TCP retransmits it.
/// So ``DirectionLink/loss`` means per-packet loss on this path, not the relay's model of what
/// loss feels like to a stream.
public struct PacketDirectionLink: Equatable, Sendable, CustomStringConvertible {
    /// Latency, jitter and its distribution, bandwidth and loss. Slicing is a byte-stream notion
    /// and must be absent (``PacketLinkConfiguration/init(link:…)`` checks).
    public var base: DirectionLink
    /// The bottleneck's buffer; applies only with a bandwidth or a trace.
    public var queue: QueueLimit
    /// A recorded link's delivery opportunities in place of a constant bandwidth (mm-link): the
    /// base link's, as the relay follows it too.
    public var trace: DeliveryTrace? {
        get { base.trace }
        set { base.trace = newValue }
    }
    /// Probability that a packet is sent twice (netem `duplicate`); the copy is lost, corrupted and
    /// delayed on its own.
    public var duplicate: Probability
    /// Probability that one random bit after the IP header is flipped (netem `corrupt`): the
    /// TCP/UDP checksum catches it, so the receiver drops it, as it would a damaged frame.
    public var corrupt: Probability
    /// Probability that a packet skips the delay and overtakes those in flight (netem `reorder`).
    /// Every other packet keeps its order.
    public var reorder: Probability

    public init(base: DirectionLink = .init(), queue: QueueLimit = .standard, trace: DeliveryTrace? = nil,
                duplicate: Probability = .zero, corrupt: Probability = .zero, reorder: Probability = .zero) {
        self.base = base
        self.queue = queue
        if let trace { self.base.trace = trace }
        self.duplicate = duplicate
        self.corrupt = corrupt
        self.reorder = reorder
    }

    public var description: String {
        var parts = base.isImpaired ? [base.description] : []
        if base.bandwidth != nil || trace != nil { parts.append("queue \(queue)") }
        if duplicate.fraction > 0 { parts.append("duplicate \(duplicate)") }
        if corrupt.fraction > 0 { parts.append("corrupt \(corrupt)") }
        if reorder.fraction > 0 { parts.append("reorder \(reorder)") }
        return parts.isEmpty ? "unimpaired" : parts.joined(separator: ", ")
    }
}

/// Both directions (up = out of the namespace towards NETSIM_HOST, down = back in).
public struct PacketLinkConfiguration: Equatable, Sendable, CustomStringConvertible {
    public var up: PacketDirectionLink
    public var down: PacketDirectionLink

    public init(up: PacketDirectionLink = .init(), down: PacketDirectionLink = .init()) {
        self.up = up
        self.down = down
    }

    public subscript(direction: Direction) -> PacketDirectionLink {
        get { direction == .up ? up : down }
        set { if direction == .up { up = newValue } else { down = newValue } }
    }

    /// What a packet path cannot do with a relay link, or a packet setting that cannot take
    /// effect; nil when every setting means something here.
    public var problem: PacketLinkProblem? {
        for direction in Direction.allCases {
            let link = self[direction]
            if link.base.sliceSize != nil { return .slicing }
            if link.trace != nil, link.base.bandwidth != nil { return .traceAndBandwidth(direction) }
            if link.reorder.fraction > 0, link.base.latency <= .zero, link.base.jitter <= .zero {
                return .reorderWithoutDelay(direction)
            }
        }
        return nil
    }

    public var description: String {
        if up == down { return up.description == "unimpaired" ? "unimpaired" : "both ways: \(up)" }
        return "up: \(up); down: \(down)"
    }
}

/// A link setting the packet path refuses, with the reason.
public enum PacketLinkProblem: Equatable, Sendable {
    /// Slicing cuts a byte stream's writes; a packet path carries the kernel's own packets.
    case slicing
    /// Reordering lets a packet skip the delay; with no delay nothing can overtake anything.
    case reorderWithoutDelay(Direction)
    /// A trace is the link's capacity over time: a constant bandwidth beside it means nothing.
    case traceAndBandwidth(Direction)
}
