import NetsimCore

/// One direction of a link (up = client→server, down = server→client).
///
/// Plain settings, no state: ``DirectionShaper`` holds the state that applying them to one
/// connection needs. The two directions are separate because real access links are asymmetric
/// (ADSL, LTE) and a scenario may impair only one way.
public struct DirectionLink: Equatable, Sendable, CustomStringConvertible {
    /// One-way delay added to every byte.
    public var latency: Duration
    /// Spread of the delay around `latency`; see ``JitterDistribution`` for its exact meaning.
    public var jitter: Duration
    public var distribution: JitterDistribution
    /// Bottleneck rate; nil = unlimited.
    public var bandwidth: DataRate?
    /// A recorded link's capacity over time (Mahimahi's format) in place of a constant
    /// `bandwidth` (never both: a scenario or the command line refuses the pair).
    public var trace: DeliveryTrace?
    /// Segment loss, as TCP experiences it (stalls and slow-down, never missing bytes); nil = none.
    public var loss: LossModel?
    /// Bytes per slice (Toxiproxy's slicer); nil = no slicing.
    public var sliceSize: Int?
    /// Delay between slices.
    public var sliceDelay: Duration
    /// Each slice is `sliceSize` ± up to this many bytes (at least 1), drawn from the seed:
    /// Toxiproxy's `size_variation`. 0: every slice is `sliceSize`.
    public var sliceVariation: Int

    public init(
        latency: Duration = .zero,
        jitter: Duration = .zero,
        distribution: JitterDistribution = .uniform,
        bandwidth: DataRate? = nil,
        loss: LossModel? = nil,
        sliceSize: Int? = nil,
        sliceDelay: Duration = .zero,
        sliceVariation: Int = 0,
        trace: DeliveryTrace? = nil
    ) {
        self.trace = trace
        self.latency = latency
        self.jitter = jitter
        self.distribution = distribution
        self.bandwidth = bandwidth
        self.loss = loss
        self.sliceSize = sliceSize
        self.sliceDelay = sliceDelay
        self.sliceVariation = sliceVariation
    }

    /// False when nothing would change the bytes' timing: the relay then uses its zero-copy fast path.
    ///
    /// A loss model that can never lose (0%) counts as no loss, and slicing counts even without a
    /// delay, because cutting writes into small pieces is a change the far side can observe.
    public var isImpaired: Bool {
        latency > .zero || jitter > .zero || bandwidth != nil || trace != nil || (loss?.canLose ?? false) || isSliced
    }

    /// True when a usable slice size is set.
    var isSliced: Bool { (sliceSize ?? 0) > 0 }

    /// Compact, e.g. `latency 100ms ±10ms normal, 780kbit, loss 2%`, or `unimpaired`.
    public var description: String {
        var parts: [String] = []
        if latency != .zero || jitter > .zero {
            var text = "latency " + latency.compactDescription
            if jitter > .zero { text += " ±" + jitter.compactDescription + " " + distribution.rawValue }
            parts.append(text)
        }
        if let bandwidth { parts.append(bandwidth.description) }
        if let trace { parts.append(trace.description) }
        if let loss, loss.canLose { parts.append("loss " + loss.description) }  // else none, as isImpaired says
        if let sliceSize, sliceSize > 0 {
            var text = "slice \(sliceSize)B"
            if sliceVariation > 0 { text += " ±\(sliceVariation)B" }
            if sliceDelay > .zero { text += " every " + sliceDelay.compactDescription }
            parts.append(text)
        }
        return parts.isEmpty ? "unimpaired" : parts.joined(separator: ", ")
    }
}

/// Both directions of a link, as one connection through the relay experiences them.
public struct LinkConfiguration: Equatable, Sendable, CustomStringConvertible {
    public var up: DirectionLink
    public var down: DirectionLink

    public init(up: DirectionLink = .init(), down: DirectionLink = .init()) {
        self.up = up
        self.down = down
    }

    /// The same impairment both ways.
    public init(both link: DirectionLink) {
        self.init(up: link, down: link)
    }

    public static let unimpaired = LinkConfiguration()

    public var isImpaired: Bool { up.isImpaired || down.isImpaired }

    /// Base round trip added by the link: up.latency + down.latency, in ns.
    /// The loss-reaction model paces and times out relative to it.
    public var roundTripNanoseconds: Int64 {
        max(0, up.latency.nanoseconds).addingSaturating(max(0, down.latency.nanoseconds))
    }

    /// When, after a client's connect, a server across this link accepts the connection: the
    /// handshake's last packet (SYN up, SYN-ACK down, ACK up) arrives, a round trip plus the
    /// latency up; the client's first bytes travel with that ACK. In ns, base latencies.
    public var handshakeNanoseconds: Int64 {
        roundTripNanoseconds.addingSaturating(max(0, up.latency.nanoseconds))
    }

    /// The settings of one direction; `config[.up]`.
    public subscript(direction: Direction) -> DirectionLink {
        get { direction == .up ? up : down }
        set {
            if direction == .up { up = newValue } else { down = newValue }
        }
    }

    /// `unimpaired`, `both ways: …` when the directions match, else `up: …; down: …`.
    public var description: String {
        if up == down { return up.description == "unimpaired" ? "unimpaired" : "both ways: \(up)" }
        return "up: \(up); down: \(down)"
    }
}
