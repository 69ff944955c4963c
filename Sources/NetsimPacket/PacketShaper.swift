import NetsimCore
import NetsimLink

/// What happens to one copy of a packet that gets through: when it reaches the far side and
/// whether it arrives damaged.
public struct PacketRelease: Equatable, Sendable {
    /// Monotonic nanoseconds at which to write it out.
    public var time: Int64
    /// The bit to flip, counted from the packet's first byte (always past the IP header); nil = intact.
    public var corruptBit: Int?
    /// The second copy of a duplicated packet.
    public var isDuplicate: Bool
    /// It skipped the delay and may overtake packets in flight.
    public var isReordered: Bool

    public init(time: Int64, corruptBit: Int? = nil, isDuplicate: Bool = false, isReordered: Bool = false) {
        self.time = time
        self.corruptBit = corruptBit
        self.isDuplicate = isDuplicate
        self.isReordered = isReordered
    }
}

/// Why a copy of a packet never arrives.
public enum PacketDrop: String, Equatable, Sendable, CaseIterable {
    /// The loss model decided it.
    case lost
    /// The bottleneck's buffer was full (drop-tail).
    case queueFull = "queue-full"
}

/// The fate of one offered packet: its copies that arrive (zero, one or two) and those dropped.
public struct PacketOutcome: Equatable, Sendable {
    public var releases: [PacketRelease] = []
    public var drops: [PacketDrop] = []
    /// Extra copies the duplicate stage made, whatever became of them (released, lost or
    /// dropped at the queue): so packets in + duplicated = delivered + every drop.
    public var duplicates = 0
}

/// One direction of the packet path's link, for one namespace: a pure state machine on injected
/// time, fed each packet as it is read and answering when (and whether) to write it.
///
/// Stages, in netem's order: duplicate ▸ (per copy) loss ▸ corrupt ▸ rate queue (a constant
/// rate, or a recorded trace's delivery opportunities) ▸ delay ▸ order.
/// Every stage draws from its own generator derived from the seed, so turning one impairment on
/// does not change the decisions of the others. Packets keep their order (a packet is never
/// released before one offered earlier) unless the reorder draw lets it skip the delay.
public struct PacketShaper: Sendable {
    public let link: PacketDirectionLink

    private var loss: LossProcess?
    private var lossRandom: SeededRandom
    private var duplicateRandom: SeededRandom
    private var corruptRandom: SeededRandom
    private var reorderRandom: SeededRandom
    private var jitterRandom: SeededRandom
    private let delay: DelaySampler
    private var queue: SerializingQueue?
    private var traceQueue: TraceQueue?
    /// The latest release of a packet that kept its order.
    private var lastInOrder = Int64.min

    public init(link: PacketDirectionLink, random: SeededRandom) {
        self.link = link
        loss = link.base.loss.flatMap { $0.canLose ? LossProcess(model: $0) : nil }
        lossRandom = random.derived(SeededRandom.label("loss"))
        duplicateRandom = random.derived(SeededRandom.label("duplicate"))
        corruptRandom = random.derived(SeededRandom.label("corrupt"))
        reorderRandom = random.derived(SeededRandom.label("reorder"))
        jitterRandom = random.derived(SeededRandom.label("jitter"))
        delay = DelaySampler(link: link.base)
        queue = link.base.bandwidth.map { SerializingQueue(bytesPerSecond: $0.bytesPerSecond, limit: link.queue) }
        traceQueue = link.trace.map { TraceQueue(trace: $0, limit: link.queue) }
    }

    /// A shaper for a new `link` that goes on from `previous`: no packet it releases leaves before
    /// one `previous` released in order, so a link change (a scenario's `link` step) never
    /// reorders packets already in flight. The new link's rate queue starts empty: packets
    /// already queued keep the release times the old rate gave them.
    public init(link: PacketDirectionLink, random: SeededRandom, continuing previous: PacketShaper) {
        self.init(link: link, random: random)
        lastInOrder = previous.lastInOrder
    }

    /// Packets and bytes in the bottleneck's buffer at the last arrival (0 without a rate or trace).
    public var backlog: (packets: Int, bytes: Int) { queue?.backlog ?? traceQueue?.backlog ?? (0, 0) }

    /// Decides the fate of a packet of `size` bytes whose IP header is `headerLength` bytes,
    /// read at `now`.
    public mutating func offer(size: Int, headerLength: Int, at now: Int64) -> PacketOutcome {
        var outcome = PacketOutcome()
        let copies = duplicateRandom.chance(link.duplicate.fraction) ? 2 : 1
        outcome.duplicates = copies - 1
        for copy in 0..<copies {
            if var process = loss {
                let lost = process.nextSegmentIsLost(using: &lossRandom)
                loss = process
                if lost {
                    outcome.drops.append(.lost)
                    continue
                }
            }
            var corruptBit: Int?
            if corruptRandom.chance(link.corrupt.fraction), size > headerLength {
                let bits = UInt64((size - headerLength) * 8)
                corruptBit = headerLength * 8 + Int(corruptRandom.next() % bits)
            }
            var departure = now
            if queue != nil || traceQueue != nil {
                guard let leaves = queue != nil ? queue!.enqueue(size: size, at: now) : traceQueue!.enqueue(size: size, at: now) else {
                    outcome.drops.append(.queueFull)
                    continue
                }
                departure = leaves
            }
            let reordered = reorderRandom.chance(link.reorder.fraction)
            var time = departure
            if !reordered {
                time = departure.addingSaturating(delay.sample(using: &jitterRandom))
                time = max(time, lastInOrder)
                lastInOrder = time
            }
            outcome.releases.append(PacketRelease(time: time, corruptBit: corruptBit, isDuplicate: copy == 1, isReordered: reordered))
        }
        return outcome
    }
}
