import ArgumentParser
import NetsimCore
import NetsimLink
import NetsimPacket

/// The flags only a packet path has (`netsim shell`): the bottleneck's buffer, duplication,
/// corruption and reordering, each both ways or per direction like the relay's link flags.
struct PacketLinkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The bottleneck's buffer behind --bandwidth, each direction, drop-tail: packets (100p) or bytes (64KB). It decides bufferbloat. Default: 1000p (netem's limit)", valueName: "size"), transform: parseQueue)
    var queue: QueueLimit?
    @Option(name: .customLong("up-queue"), help: ArgumentHelp("Buffer client→host only. Example: 32KB", valueName: "size"), transform: parseQueue)
    var upQueue: QueueLimit?
    @Option(name: .customLong("down-queue"), help: ArgumentHelp("Buffer host→client only. Example: 50p", valueName: "size"), transform: parseQueue)
    var downQueue: QueueLimit?

    @Option(help: ArgumentHelp("Send this share of packets twice, each direction. Example: --duplicate 1%", valueName: "percent"), transform: parseProbability)
    var duplicate: Probability?
    @Option(name: .customLong("up-duplicate"), help: ArgumentHelp("Duplicate client→host only.", valueName: "percent"), transform: parseProbability)
    var upDuplicate: Probability?
    @Option(name: .customLong("down-duplicate"), help: ArgumentHelp("Duplicate host→client only.", valueName: "percent"), transform: parseProbability)
    var downDuplicate: Probability?

    @Option(help: ArgumentHelp("Flip one random bit past the IP header in this share of packets, each direction (the receiver's checksum drops them). Example: --corrupt 0.1%", valueName: "percent"), transform: parseProbability)
    var corrupt: Probability?
    @Option(name: .customLong("up-corrupt"), help: ArgumentHelp("Corrupt client→host only.", valueName: "percent"), transform: parseProbability)
    var upCorrupt: Probability?
    @Option(name: .customLong("down-corrupt"), help: ArgumentHelp("Corrupt host→client only.", valueName: "percent"), transform: parseProbability)
    var downCorrupt: Probability?

    @Option(help: ArgumentHelp("Let this share of packets skip the delay and overtake those in flight, each direction; the rest keep their order. Needs a latency. Example: --reorder 5%", valueName: "percent"), transform: parseProbability)
    var reorder: Probability?
    @Option(name: .customLong("up-reorder"), help: ArgumentHelp("Reorder client→host only.", valueName: "percent"), transform: parseProbability)
    var upReorder: Probability?
    @Option(name: .customLong("down-reorder"), help: ArgumentHelp("Reorder host→client only.", valueName: "percent"), transform: parseProbability)
    var downReorder: Probability?

    /// The relay's link (from the shared link flags) with the packet settings on top.
    func configuration(link: LinkConfiguration) throws -> PacketLinkConfiguration {
        var result = PacketLinkConfiguration()
        for direction in Direction.allCases {
            let up = direction == .up
            result[direction] = PacketDirectionLink(
                base: link[direction],
                queue: (up ? upQueue : downQueue) ?? queue ?? .standard,
                duplicate: (up ? upDuplicate : downDuplicate) ?? duplicate ?? .zero,
                corrupt: (up ? upCorrupt : downCorrupt) ?? corrupt ?? .zero,
                reorder: (up ? upReorder : downReorder) ?? reorder ?? .zero)
            if link[direction].bandwidth == nil, link[direction].trace == nil, (up ? upQueue : downQueue) != nil {
                throw ValidationError("--\(direction)-queue needs a bandwidth that way (--bandwidth, --\(direction)-bandwidth or --trace-\(direction)): a queue forms only behind a rate limit")
            }
        }
        if queue != nil, link.up.bandwidth == nil, link.down.bandwidth == nil, link.up.trace == nil, link.down.trace == nil {
            throw ValidationError("--queue needs a --bandwidth (or --up-/--down-bandwidth, or a --trace-up/--trace-down): a queue forms only behind a rate limit")
        }
        switch result.problem {
        case nil:
            break
        case .slicing:
            throw ValidationError("--slice, --slice-delay and --slice-variation are for netsim relay and proxy (they cut a byte stream's writes); netsim shell carries the kernel's own packets. Use --bandwidth or --latency instead")
        case .traceAndBandwidth(let direction):
            throw ValidationError(traceAndBandwidth(direction))
        case .reorderWithoutDelay(let direction):
            throw ValidationError("--reorder (\(direction)) needs a --latency or --jitter in that direction: a reordered packet overtakes others by skipping the delay, so with no delay nothing can be overtaken")
        }
        return result
    }
}

extension PacketLinkOptions {
    /// The packet-only flags given, by name.
    var given: [String] {
        [("--queue", queue != nil), ("--up-queue", upQueue != nil), ("--down-queue", downQueue != nil),
         ("--duplicate", duplicate != nil), ("--up-duplicate", upDuplicate != nil), ("--down-duplicate", downDuplicate != nil),
         ("--corrupt", corrupt != nil), ("--up-corrupt", upCorrupt != nil), ("--down-corrupt", downCorrupt != nil),
         ("--reorder", reorder != nil), ("--up-reorder", upReorder != nil), ("--down-reorder", downReorder != nil)]
            .filter(\.1).map(\.0)
    }

    /// For a command that carries a byte stream (`netsim relay`): these flags are accepted by the
    /// parser (hidden) only to say why they cannot apply, instead of "unknown option".
    func refuse(in command: String) throws {
        guard let first = given.first else { return }
        throw ValidationError("\(first) acts on single packets, which \(command) never sees (it relays a byte stream): use netsim shell (Linux, root; docs/packet.md)")
    }
}

func parseQueue(_ text: String) throws -> QueueLimit { try QueueLimit(parsing: text) }
