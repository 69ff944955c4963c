import NetsimCore

/// How much the bottleneck's queue holds before it drops arriving packets (drop-tail).
///
/// The buffer, not the rate, decides bufferbloat: a full queue of N bytes adds N·8/rate of delay
/// to every packet behind it. Packets count the way a qdisc's `limit` does (tc netem, pfifo);
/// bytes the way a `bfifo` or a modem's buffer does.
public enum QueueLimit: Equatable, Sendable, CustomStringConvertible {
    case packets(Int)
    case bytes(Int)

    /// 1000 packets: netem's and pfifo's default `limit` (and Linux's default `txqueuelen`), so
    /// `--bandwidth` alone behaves as `tc qdisc add … netem rate …` would. It is deep on purpose:
    /// at 1 Mbit/s a full queue of 1500-byte packets is 12 s of delay, the bufferbloat of a real
    /// cellular modem. Pass a smaller `--queue` for a shallow buffer.
    public static let standard = QueueLimit.packets(1000)

    public static let allowedForms = "a packet count (100p, 100packets) or a byte count (64KB, 1MiB, 150000)"

    /// `100p`, `100pkt`, `100packets` or a ``ByteCount`` (`64KB`, `150000`).
    public init(parsing text: String) throws {
        let lower = text.lowercased()
        for suffix in ["packets", "packet", "pkts", "pkt", "p"] where lower.hasSuffix(suffix) {
            let number = lower.dropLast(suffix.count)
            guard let count = Int(number), count >= 1 else { break }
            self = .packets(count)
            return
        }
        let error = UnitParseError(input: text, expected: "a queue size", allowedForms: Self.allowedForms)
        guard let count = try? ByteCount(parsing: text), count.bytes >= 1 else { throw error }
        // A byte queue smaller than one full-size packet drops every such packet: a typo for `10p`.
        guard count.bytes >= Self.fullSizePacket else {
            throw UnitParseError(input: text, expected: "a queue that holds a full-size packet (\(Self.fullSizePacket) bytes)",
                                 allowedForms: "\(Self.fullSizePacket) bytes or more (64KB, 150000), or a packet count (\(Int(text) != nil ? text : "10")p)")
        }
        self = .bytes(count.bytes)
    }

    /// The largest packet on netsim's packet links (their MTU): the least a byte queue must hold.
    public static let fullSizePacket = 1500

    /// True when a packet of `size` bytes still fits behind `packets` packets of `bytes` bytes.
    public func admits(size: Int, queuedPackets packets: Int, queuedBytes bytes: Int) -> Bool {
        switch self {
        case .packets(let limit): return packets + 1 <= limit
        case .bytes(let limit): return bytes + size <= limit
        }
    }

    public var description: String {
        switch self {
        case .packets(let n): return "\(n) packets"
        case .bytes(let n): return ByteCount(n).description + " bytes"
        }
    }
}
