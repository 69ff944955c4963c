import NetsimCore

/// Bulk-transfer throughput of the loss model, and the Mathis et al. formula to hold it against.
///
/// The loss-reaction model is simple on purpose; this is how we check it is not *wrong*: over a
/// long transfer it should land in the same range as the well-known steady-state TCP throughput
/// MSS/RTT × 1.22/√p, and depart from it only where we know why (docs/link-models.md).
public enum LossThroughputSimulation {
    /// Bytes handed to the shaper per read, like a relay reading a busy socket.
    public static let chunkBytes = 65536
    /// Bytes the source may have in the shaper that are not yet released: a relay's high-water mark.
    public static let windowBytes = 1 << 20

    /// Feeds `bytes` through a ``DirectionShaper`` as fast as it accepts them and returns the
    /// achieved throughput in bytes per second (0 if the stream stalls forever).
    ///
    /// 64 KiB chunks arrive back to back, except that the source may be at most ``windowBytes``
    /// ahead of the far side: chunk k arrives no earlier than chunk k−16 was released.
    /// Throughput is bytes / (last release − first arrival).
    public static func run(link: DirectionLink, roundTripNanoseconds: Int64, bytes: Int, seed: UInt64) -> Double {
        var shaper = DirectionShaper(link: link, roundTripNanoseconds: roundTripNanoseconds, random: SeededRandom(seed: seed))
        let windowChunks = max(1, windowBytes / chunkBytes)
        var releasedAt = [Int64](repeating: 0, count: windowChunks)
        var out: [Release] = []
        out.reserveCapacity(256)
        var arrival: Int64 = 0
        var last: Int64 = 0
        var sent = 0
        var index = 0
        while sent < bytes {
            let count = min(chunkBytes, bytes - sent)
            arrival = max(arrival, releasedAt[index % windowChunks])
            out.removeAll(keepingCapacity: true)
            shaper.schedule(bytes: count, arrivedAt: arrival, into: &out)
            guard let end = out.last?.at, end != Release.neverNanoseconds else { return 0 }
            releasedAt[index % windowChunks] = end
            last = end
            sent += count
            index += 1
        }
        guard last > 0 else { return .infinity }
        return Double(bytes) / (Double(last) / 1e9)
    }

    /// Mathis et al. (1997): steady-state TCP Reno throughput MSS/RTT × √(3/2)/√p ≈ MSS/RTT × 1.22/√p,
    /// in bytes per second. `loss` is a fraction (0.01 for 1%).
    public static func mathisBytesPerSecond(mss: Int = LossRecovery.maximumSegmentSize, rtt: Duration, loss: Double) -> Double {
        Double(mss) / rtt.seconds * 1.22 / loss.squareRoot()
    }

    /// One row of the comparison `netsim bench` prints.
    public struct Comparison: Equatable, Sendable {
        public var rttMs: Int
        public var lossPercent: Double
        public var modelBytesPerSecond: Double
        public var mathisBytesPerSecond: Double
        /// model / Mathis.
        public var ratio: Double { modelBytesPerSecond / mathisBytesPerSecond }
    }

    public static let comparisonRoundTripsMs = [20, 100, 300]
    public static let comparisonLossPercents = [0.5, 1, 2, 5]

    /// The model against Mathis for RTT ∈ {20, 100, 300 ms} × loss ∈ {0.5, 1, 2, 5 %}, Bernoulli loss,
    /// latency RTT/2 on the measured direction.
    ///
    /// Each transfer is long enough for about `lossEvents` losses (200 000 segments at 0.5%),
    /// which keeps the seed-to-seed spread to a few percent.
    public static func comparisonTable(seed: UInt64, lossEvents: Int = 1000) -> [Comparison] {
        var rows: [Comparison] = []
        for rttMs in comparisonRoundTripsMs {
            for lossPercent in comparisonLossPercents {
                let loss = lossPercent / 100
                let rtt = Duration.milliseconds(rttMs)
                let link = DirectionLink(latency: .milliseconds(rttMs / 2), loss: .bernoulli(.percent(lossPercent)))
                let segments = Int((Double(lossEvents) / loss).rounded())
                let rowSeed = SeededRandom(seed: seed).derived(UInt64(rttMs), UInt64(lossPercent * 1000)).seed
                let model = run(
                    link: link, roundTripNanoseconds: rtt.nanoseconds,
                    bytes: segments * LossRecovery.maximumSegmentSize, seed: rowSeed)
                rows.append(Comparison(
                    rttMs: rttMs, lossPercent: lossPercent, modelBytesPerSecond: model,
                    mathisBytesPerSecond: mathisBytesPerSecond(rtt: rtt, loss: loss)))
            }
        }
        return rows
    }
}
