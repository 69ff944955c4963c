import NetsimCore
import NetsimLink
import NetsimLoopback
import Testing

@Suite struct MathisComparisonTests {
    @Test func mathisFormula() {
        // 1448 B / 0.1 s × 1.22 / √0.01 = 176 656 B/s.
        let value = LossThroughputSimulation.mathisBytesPerSecond(mss: 1448, rtt: .milliseconds(100), loss: 0.01)
        #expect(abs(value - 176_656) < 1)
    }

    /// Mathis assumes every loss is repaired by fast retransmit within about one RTT. The model
    /// repairs every loss with a retransmission timeout, RTT + 200 ms. Between losses both grow
    /// the window the same way, so one loss cycle lasts C = RTT × √(2/(3p)) in both, plus the
    /// timeout in the model: the model should reach about C/(C + RTO) of Mathis. Over the table
    /// that ranges from 0.25 (20 ms, 5%) to 0.87 (300 ms, 0.5%).
    ///
    /// Bands: model/Mathis within 0.15…1.2 (never faster than Mathis by more than noise, never
    /// below the worst timeout-corrected ratio by much), and model within ±25% of the
    /// timeout-corrected prediction. Over seeds 1…20 the observed extremes were 0.21…0.94 of
    /// Mathis and 0.86…1.09 of the prediction; the remaining spread is Bernoulli loss being
    /// random rather than periodic and the 2-segment window floor. Seed fixed: no flakiness.
    @Test func modelThroughputTracksMathisWithinAStatedBand() async throws {
        // A simulation: off the test pool that other tests' timers need (see Offload.swift).
        let table = try await offload { LossThroughputSimulation.comparisonTable(seed: 1) }
        #expect(table.count == 12)
        #expect(Set(table.map(\.rttMs)) == [20, 100, 300])
        #expect(Set(table.map(\.lossPercent)) == [0.5, 1, 2, 5])
        for row in table {
            let rtt = Double(row.rttMs) / 1000
            let cycle = rtt * (2 / (3 * row.lossPercent / 100)).squareRoot()
            let predicted = cycle / (cycle + rtt + 0.2)
            #expect((0.15...1.2).contains(row.ratio), "\(row)")
            #expect(abs(row.ratio / predicted - 1) < 0.25, "\(row): predicted ratio \(predicted)")
        }
        // More loss is slower, longer round trips are slower.
        for rtt in [20, 100, 300] {
            let speeds = table.filter { $0.rttMs == rtt }.sorted { $0.lossPercent < $1.lossPercent }.map(\.modelBytesPerSecond)
            #expect(speeds == speeds.sorted(by: >))
        }
    }

    @Test func theTableIsReproducible() {
        #expect(LossThroughputSimulation.comparisonTable(seed: 7, lossEvents: 100)
            == LossThroughputSimulation.comparisonTable(seed: 7, lossEvents: 100))
    }

    @Test func aStalledStreamHasNoThroughput() {
        let link = DirectionLink(loss: .bernoulli(.certain))
        #expect(LossThroughputSimulation.run(link: link, roundTripNanoseconds: 100 * ms, bytes: 100_000, seed: 1) == 0)
    }

    @Test func withoutLossTheSimulationRunsAtTheBandwidth() {
        let link = DirectionLink(latency: .milliseconds(10), bandwidth: .mbit(8))
        let speed = LossThroughputSimulation.run(link: link, roundTripNanoseconds: 20 * ms, bytes: 10_000_000, seed: 1)
        #expect(abs(speed / 1e6 - 1) < 0.01)
    }
}
