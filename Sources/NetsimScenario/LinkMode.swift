import NetsimCore
import NetsimLink

/// Where a scenario's link acts: `link: { mode: relay | packet }`.
public enum LinkMode: String, Equatable, Sendable, CaseIterable {
    /// The userspace TCP relay between the client and the upstream (the default): byte streams,
    /// every relay fault, HTTP observation, any platform.
    case relay
    /// A packet path (docs/packet.md; Linux, root): the client runs inside a network namespace
    /// whose packets netsim impairs one by one, the upstream listens on the host side
    /// (`NETSIM_HOST`), the kernel's own TCP feels the loss; packet faults (offline, handover, …)
    /// and a resolver the client really uses (`dns:`).
    case packet
}

/// The link settings only a packet path has (`link: { mode: packet, queue: 100p, up: { reorder: 1% } }`),
/// meaning exactly what `netsim shell --queue/--duplicate/--corrupt/--reorder` mean.
public struct PacketLinkSettings: Equatable, Sendable {
    public struct DirectionSettings: Equatable, Sendable {
        /// The bottleneck's buffer behind the rate (drop-tail); nil: the standard 1000 packets.
        public var queue: QueueLimit?
        public var duplicate: Probability?
        public var corrupt: Probability?
        public var reorder: Probability?

        public init(queue: QueueLimit? = nil, duplicate: Probability? = nil, corrupt: Probability? = nil, reorder: Probability? = nil) {
            self.queue = queue
            self.duplicate = duplicate
            self.corrupt = corrupt
            self.reorder = reorder
        }

        /// Each setting of `self`, else `fallback`'s.
        func over(_ fallback: DirectionSettings) -> DirectionSettings {
            DirectionSettings(queue: queue ?? fallback.queue, duplicate: duplicate ?? fallback.duplicate,
                              corrupt: corrupt ?? fallback.corrupt, reorder: reorder ?? fallback.reorder)
        }
    }

    /// Both ways, unless a direction's own setting says otherwise.
    public var both: DirectionSettings
    public var up: DirectionSettings
    public var down: DirectionSettings

    public init(both: DirectionSettings = .init(), up: DirectionSettings = .init(), down: DirectionSettings = .init()) {
        self.both = both
        self.up = up
        self.down = down
    }

    /// What applies in `direction`: its own settings over the both-ways ones.
    public subscript(direction: Direction) -> DirectionSettings {
        (direction == .up ? up : down).over(both)
    }

    /// The keys, both ways or per direction, that only a packet path reads.
    static let keys = ["queue", "duplicate", "corrupt", "reorder"]
}
