import Foundation
import NetsimCore

/// The shape of the random part of a delay, after netem's `distribution` option.
///
/// Every case is standardised to mean 0 and standard deviation 1, except `uniform`, which spans
/// −1…+1 so that `±jitter` means what it says (netem's and Toxiproxy's convention). The delay is
/// then `latency + jitter × Z`, clamped at zero.
public enum JitterDistribution: String, CaseIterable, Sendable {
    /// Z ~ U(−1, 1): every delay in `latency ± jitter` equally likely; standard deviation jitter/√3.
    case uniform
    /// Z ~ N(0, 1) (Box–Muller): most delays near the latency, rare large excursions both ways.
    case normal
    /// Pareto(α = 3, x_m = 1) standardised: short delays are common and a few are very long,
    /// like queueing behind bursty cross-traffic. Never more than 0.58 jitter below the latency.
    case pareto
    /// A mix of the two after netem's `paretonormal`: (0.25·P + 0.75·N) / √(0.25² + 0.75²) with
    /// independent P (standardised Pareto) and N (normal); mean 0, sd 1. Mostly normal with a
    /// Pareto tail. netem's own table weights the other way (¾ Pareto, ¼ normal, on a shared
    /// quantile); docs/link-models.md says more.
    case paretonormal

    /// Pareto shape used by ``pareto``: the smallest integer α with a finite variance, so the
    /// distribution can be standardised while keeping a tail much heavier than the normal's.
    static let paretoShape = 3.0
    /// Mean and standard deviation of Pareto(α = 3, x_m = 1): α/(α−1) and √(α/((α−1)²(α−2))).
    static let paretoMean = 1.5
    static let paretoStandardDeviation = 0.75.squareRoot()
    static let mixNorm = (0.25 * 0.25 + 0.75 * 0.75).squareRoot()

    /// One draw of Z, the standardised jitter multiplier.
    public func sample(using random: inout SeededRandom) -> Double {
        switch self {
        case .uniform:
            return 2 * random.nextUnit() - 1
        case .normal:
            return Self.standardNormal(using: &random)
        case .pareto:
            return Self.standardPareto(using: &random)
        case .paretonormal:
            let p = Self.standardPareto(using: &random)
            let n = Self.standardNormal(using: &random)
            return (0.25 * p + 0.75 * n) / Self.mixNorm
        }
    }

    /// Box–Muller; uses one of the pair so that a sample never depends on an earlier one.
    static func standardNormal(using random: inout SeededRandom) -> Double {
        let u1 = 1 - random.nextUnit()  // (0, 1]: log stays finite
        let u2 = random.nextUnit()
        return (-2 * Foundation.log(u1)).squareRoot() * Foundation.cos(2 * Double.pi * u2)
    }

    /// Pareto by inversion, x_m / U^(1/α), shifted and scaled to mean 0, sd 1.
    static func standardPareto(using random: inout SeededRandom) -> Double {
        let u = 1 - random.nextUnit()  // (0, 1]
        let x = Foundation.pow(u, -1 / paretoShape)
        return (x - paretoMean) / paretoStandardDeviation
    }
}

/// The latency stage's random delay: `latency + jitter × Z`, never negative.
///
/// Stateless apart from the generator it is handed, so a delay never depends on the delays
/// before it; ordering is restored afterwards by ``DirectionShaper`` (bytes never overtake).
public struct DelaySampler: Equatable, Sendable {
    public var latencyNanoseconds: Int64
    public var jitterNanoseconds: Int64
    public var distribution: JitterDistribution

    public init(latency: Duration, jitter: Duration, distribution: JitterDistribution) {
        latencyNanoseconds = latency.nanoseconds
        jitterNanoseconds = jitter.nanoseconds
        self.distribution = distribution
    }

    public init(link: DirectionLink) {
        self.init(latency: link.latency, jitter: link.jitter, distribution: link.distribution)
    }

    /// One delay in nanoseconds. Draws nothing from `random` when there is no jitter, so adding
    /// or removing jitter never shifts other decisions made with the same generator.
    public func sample(using random: inout SeededRandom) -> Int64 {
        guard jitterNanoseconds > 0 else { return max(0, latencyNanoseconds) }
        let z = distribution.sample(using: &random)
        let delay = Double(latencyNanoseconds) + Double(jitterNanoseconds) * z
        guard delay > 0 else { return 0 }
        guard delay < Double(Int64.max / 2) else { return Int64.max / 2 }
        return Int64(delay.rounded())
    }
}
