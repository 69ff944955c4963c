import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
import Testing

@Suite struct JitterDistributionTests {
    static let latency = 100 * ms
    static let jitter = 10 * ms

    /// 100 000 delays through a real shaper: chunks 10 s apart, so ordering never clips a delay
    /// and release − arrival is exactly the sampled delay.
    static func delays(_ distribution: JitterDistribution, seed: UInt64 = 5) -> [Double] {
        var shaper = DirectionShaper(
            link: DirectionLink(latency: .nanoseconds(latency), jitter: .nanoseconds(jitter), distribution: distribution),
            roundTripNanoseconds: 2 * latency, random: SeededRandom(seed: seed))
        var out: [Release] = []
        var delays: [Double] = []
        delays.reserveCapacity(100_000)
        for index in 0..<100_000 {
            let arrival = Int64(index) * 10 * second
            out.removeAll(keepingCapacity: true)
            shaper.schedule(bytes: 1, arrivedAt: arrival, into: &out)
            delays.append(Double(out[0].at - arrival))
        }
        return delays
    }

    static func moments(_ values: [Double]) -> (mean: Double, sd: Double) {
        let mean = values.reduce(0, +) / Double(values.count)
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count - 1)
        return (mean, variance.squareRoot())
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(p * Double(sorted.count)))]
    }

    /// Tolerances. Mean: the standard error is sd/√n ≈ 0.03 ms for every distribution (all have
    /// finite variance), so 0.2 ms is over six standard errors. Standard deviation: for uniform
    /// and normal the sample sd's relative error is √((κ−1)/4n) ≈ 0.2%, so 2% is generous; the
    /// Pareto family (α = 3) has an infinite fourth moment, so its sample sd converges slowly and
    /// is dominated by a few huge draws: 10% for pure Pareto, 5% for the mix that is 3/4 normal.
    @Test(arguments: [
        (JitterDistribution.uniform, 1 / 3.0.squareRoot(), 0.02),
        (.normal, 1.0, 0.02),
        (.pareto, 1.0, 0.10),
        (.paretonormal, 1.0, 0.05),
    ])
    func meanIsTheLatencyAndSpreadMatchesTheJitter(distribution: JitterDistribution, sdPerJitter: Double, sdTolerance: Double) {
        let (mean, sd) = Self.moments(Self.delays(distribution))
        #expect(abs(mean - Double(Self.latency)) < 0.2e6, "mean \(mean)")
        let expectedSD = Double(Self.jitter) * sdPerJitter
        #expect(abs(sd / expectedSD - 1) < sdTolerance, "sd \(sd) expected \(expectedSD)")
    }

    @Test func uniformStaysWithinPlusMinusJitter() {
        let delays = Self.delays(.uniform)
        #expect(delays.min()! >= Double(Self.latency - Self.jitter))
        #expect(delays.max()! <= Double(Self.latency + Self.jitter))
        #expect(delays.min()! < Double(Self.latency - Self.jitter) + 0.01e6)
    }

    /// Standardised Pareto(3)'s 99.9th percentile is (0.001^(−1/3) − 1.5)/√0.75 ≈ 9.8 sd,
    /// the normal's 3.09 sd: the tail must be clearly heavier, and the Pareto never goes more
    /// than 1.5/√3 ≈ 0.58 sd below the latency.
    @Test func paretoHasAHeavierUpperTailThanNormal() async throws {
        // Many draws: off the test pool that other tests' timers need (see Offload.swift).
        let (pareto, normal) = try await offload { (Self.delays(.pareto), Self.delays(.normal)) }
        let excessPareto = Self.percentile(pareto, 0.999) - Double(Self.latency)
        let excessNormal = Self.percentile(normal, 0.999) - Double(Self.latency)
        #expect(excessPareto > 2 * excessNormal)
        #expect(abs(excessNormal / Double(Self.jitter) - 3.09) < 0.3)
        #expect(abs(excessPareto / Double(Self.jitter) - 9.8) < 1.5)
        #expect(pareto.min()! >= Double(Self.latency) - 0.578 * Double(Self.jitter))
    }

    @Test func delayIsClampedAtZeroWhenJitterExceedsLatency() {
        let sampler = DelaySampler(latency: .milliseconds(1), jitter: .milliseconds(50), distribution: .normal)
        var random = SeededRandom(seed: 2)
        let samples = (0..<10_000).map { _ in sampler.sample(using: &random) }
        #expect(samples.min() == 0)
        #expect(samples.allSatisfy { $0 >= 0 })
    }

    @Test func noJitterDrawsNothing() {
        let sampler = DelaySampler(latency: .milliseconds(7), jitter: .zero, distribution: .pareto)
        var random = SeededRandom(seed: 9)
        let before = random
        #expect(sampler.sample(using: &random) == 7 * ms)
        #expect(random.next() == { var copy = before; return copy.next() }())
    }
}
