import Foundation
import NetsimCore
import NetsimLink

/// The second table: the loss model's bulk throughput against the Mathis et al. formula.
///
/// Mathis assumes every loss is repaired by fast retransmit within about one round trip; the
/// model repairs each loss with a retransmission timeout (RTT + 200 ms). Both grow the window the
/// same way between losses, so one loss cycle lasts C = RTT·√(2/(3p)) in both, plus the timeout in
/// the model, which should therefore reach about C / (C + RTT + 200 ms) of Mathis.
enum ModelBench {
    static let seed: UInt64 = 1
    /// Model within this fraction of the timeout-corrected prediction (as the NetsimLink tests check).
    static let tolerance = 0.25

    static func run(_ settings: BenchSettings) -> (table: String, notes: [String]) {
        let lossEvents = settings.quick ? 200 : 1000
        let start = monotonicSeconds()
        let rows = LossThroughputSimulation.comparisonTable(seed: seed, lossEvents: lossEvents)
        let seconds = monotonicSeconds() - start
        let lines = rows.map { row -> [String] in
            let rtt = Double(row.rttMs) / 1000
            let cycle = rtt * (2 / (3 * row.lossPercent / 100)).squareRoot()
            let predicted = cycle / (cycle + rtt + 0.2)
            let deviation = row.ratio / predicted - 1
            return [
                "\(row.rttMs) ms", Format.fixed(row.lossPercent, 1) + "%",
                Format.rate(bitsPerSecond: row.modelBytesPerSecond * 8),
                Format.rate(bitsPerSecond: row.mathisBytesPerSecond * 8),
                Format.fixed(row.ratio, 2) + "×",
                Format.fixed(predicted, 2) + "×",
                Verdict.atMost(abs(deviation), tolerance) { Format.percent($0, signed: false) } + " (\(Format.fixed(deviation * 100, 1))%)",
            ]
        }
        let table = renderTable(
            header: ["RTT", "loss", "model", "Mathis", "model/Mathis", "predicted ratio", "verdict: within ±25% of predicted"],
            rows: lines)
        let notes = [
            "Model: LossThroughputSimulation.comparisonTable(seed: \(seed), lossEvents: \(lossEvents)), Bernoulli loss, "
                + "MSS \(LossRecovery.maximumSegmentSize) B, computed in \(Format.fixed(seconds, 2)) s.",
            "Predicted ratio = C / (C + RTT + 200 ms), C = RTT·√(2/(3p)): Mathis repairs losses by fast retransmit, "
                + "the model by a retransmission timeout (see NetsimLink's LossThroughputSimulation).",
        ]
        return (table, notes)
    }
}
