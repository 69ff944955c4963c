import NetsimCore

/// What happens to the relay's upstream connect when SYNs (up) or SYN-ACKs (down) are lost.
public enum ConnectOutcome: Equatable, Sendable {
    /// The handshake completes after this much retrying (0 when the first SYN got through).
    case connect(afterNanoseconds: Int64)
    /// Every attempt was lost; the connect fails after this long, as Linux's does.
    case timeout(afterNanoseconds: Int64)
}

/// Decides, at accept time, how a lossy link delays the connection's handshake.
///
/// The relay's own connect to the upstream crosses no lossy link (the loss is simulated), so the
/// relay asks this model how long a real client's connect would have taken and holds the upstream
/// connect (or fails it) accordingly. The link's latency is not included; only retry waiting is.
public enum ConnectModel {
    /// When each SYN is sent, relative to the first: Linux's initial 1 s SYN timeout (RFC 6298)
    /// doubling on each of tcp_syn_retries = 6 retries.
    public static let attemptOffsetsNanoseconds: [Int64] = [0, 1, 3, 7, 15, 31, 63].map { $0 * 1_000_000_000 }
    /// After the last retry Linux waits one more doubled timeout (64 s) and gives up: 127 s.
    public static let timeoutNanoseconds: Int64 = 127_000_000_000

    /// Each attempt is lost if the up-direction loss draw OR the down-direction draw loses it.
    /// Linux timing: retries after 1 s, then 2, 4, 8, 16, 32 s (so connect is delayed 0, 1, 3, 7, 15, 31, 63 s);
    /// after 6 retries it gives up at 127 s → .timeout(127 s). No loss configured → .connect(0).
    ///
    /// The SYN-ACK is only drawn for when the SYN got through (it is only sent then), which
    /// matters for bursty loss; the success probability per attempt is (1 − up)(1 − down) either way.
    public static func outcome(link: LinkConfiguration, random: inout SeededRandom) -> ConnectOutcome {
        var up = link.up.loss.flatMap { $0.canLose ? LossProcess(model: $0) : nil }
        var down = link.down.loss.flatMap { $0.canLose ? LossProcess(model: $0) : nil }
        if up == nil && down == nil { return .connect(afterNanoseconds: 0) }
        for offset in attemptOffsetsNanoseconds {
            let synLost = up?.nextSegmentIsLost(using: &random) ?? false
            let synAckLost = !synLost && (down?.nextSegmentIsLost(using: &random) ?? false)
            if !synLost && !synAckLost { return .connect(afterNanoseconds: offset) }
        }
        return .timeout(afterNanoseconds: timeoutNanoseconds)
    }
}
