import NetsimCore

/// How segments are lost on a direction of the link.
///
/// A userspace relay never sees packets, so loss here is a *decision per simulated TCP segment*
/// that the loss-reaction stage (``LossRecovery``) turns into what an application would see:
/// stalls and a slower stream, never missing bytes.
public enum LossModel: Equatable, Sendable {
    /// Each segment is lost independently with this probability (netem `loss random`).
    case bernoulli(Probability)
    /// Gilbert–Elliott: p = P(good→bad) per segment, r = P(bad→good), loss probability in each state.
    /// Losses come in bursts, as on a fading radio link or a briefly full queue.
    case gilbertElliott(p: Probability, r: Probability, badLoss: Probability, goodLoss: Probability)

    /// Average loss probability (stationary), for descriptions and Mathis comparisons.
    ///
    /// For Gilbert–Elliott the chain spends p/(p+r) of segments in the bad state. With p = r = 0
    /// it never leaves the good state it starts in.
    public var averageLoss: Double {
        switch self {
        case .bernoulli(let probability):
            return probability.fraction
        case .gilbertElliott(let p, let r, let badLoss, let goodLoss):
            let total = p.fraction + r.fraction
            guard total > 0 else { return goodLoss.fraction }
            let bad = p.fraction / total
            return bad * badLoss.fraction + (1 - bad) * goodLoss.fraction
        }
    }

    /// False when no segment can ever be lost (0% Bernoulli, or GE with nothing lost in any state
    /// the chain can reach). Such a model is treated exactly like no loss model at all.
    public var canLose: Bool {
        switch self {
        case .bernoulli(let probability):
            return probability.fraction > 0
        case .gilbertElliott(let p, _, let badLoss, let goodLoss):
            return goodLoss.fraction > 0 || (p.fraction > 0 && badLoss.fraction > 0)
        }
    }

    /// GE parameters giving average loss `loss` with mean burst length `meanBurst` segments (bad-state loss 100%, good 0%).
    ///
    /// The bad state lasts 1/r segments on average, so r = 1/meanBurst; the stationary share of
    /// bad segments p/(p+r) must equal the loss, so p = loss·r/(1−loss). `meanBurst` below 1 is
    /// read as 1. When p would exceed 1 (very high loss with short bursts) it is capped at 1 and
    /// the average falls short of the request; ``averageLoss`` reports what you actually get.
    /// The front ends refuse such a request (``highestBurstyLoss(meanBurst:)`` says where it starts).
    /// The highest average loss short of 100% that ``gilbertElliott(averageLoss:meanBurst:)``
    /// reaches with bursts `meanBurst` segments long: with p at 1 every burst is followed by
    /// exactly one good segment, so meanBurst/(meanBurst+1) of the segments are lost (80% for 4).
    public static func highestBurstyLoss(meanBurst: Double) -> Double {
        let burst = meanBurst.isFinite ? max(1, meanBurst) : 1
        return burst / (burst + 1)
    }

    /// The shortest mean burst, in whole segments, with which `loss` is reachable: loss/(1−loss).
    public static func burstReaching(_ loss: Probability) -> Double {
        guard loss.fraction < 1 else { return .infinity }
        // Rounded to 9 digits first, so 99.9999% asks for 999999 segments, not 1000000.
        let exact = loss.fraction / (1 - loss.fraction)
        return ((exact * 1e9).rounded() / 1e9).rounded(.up)
    }

    public static func gilbertElliott(averageLoss loss: Probability, meanBurst: Double) -> LossModel {
        let burst = meanBurst.isFinite ? max(1, meanBurst) : 1
        let r = 1 / burst
        let p: Double
        if loss.fraction >= 1 {
            p = 1
        } else {
            p = min(1, loss.fraction * r / (1 - loss.fraction))
        }
        return .gilbertElliott(
            p: Probability(fraction: p),
            r: Probability(fraction: loss.fraction >= 1 ? 0 : r),
            badLoss: .certain,
            goodLoss: .zero
        )
    }
}

extension LossModel: CustomStringConvertible {
    /// `2%` for Bernoulli; `2% bursty (p 0.5%, r 25%, bad 100%, good 0%)` for Gilbert–Elliott.
    ///
    /// A chain that cannot make bursts says what it does instead: with p = 0 it never leaves
    /// the good state, with r = 0 it never leaves the bad one once there, and with equal losses
    /// in both states the state does not matter; each of these loses segments independently.
    /// With r = 100% a bad state lasts one segment: no burst is longer.
    public var description: String {
        switch self {
        case .bernoulli(let probability):
            return probability.description
        case .gilbertElliott(let p, let r, let badLoss, let goodLoss):
            let average = Probability(fraction: min(1, max(0, averageLoss)))
            let parameters = "(p \(p), r \(r), bad \(badLoss), good \(goodLoss))"
            if p.fraction == 0 {
                return "\(goodLoss) independent, never leaving the good state \(parameters)"
            } else if badLoss == goodLoss {
                return "\(goodLoss) independent, the same in both states \(parameters)"
            } else if r.fraction == 0 {
                return "\(badLoss) independent once in the bad state, which it never leaves \(parameters)"
            } else if r.fraction == 1 {
                return "\(average), each bad state one segment long \(parameters)"
            }
            return "\(average) bursty \(parameters)"
        }
    }
}

/// The state of a ``LossModel`` as it is applied to one stream: one call per transmitted segment.
public struct LossProcess: Sendable {
    public let model: LossModel
    /// Gilbert–Elliott's current state; it starts good. Always false for Bernoulli.
    public private(set) var isInBadState = false

    /// Whether one segment's fate depends on the ones before it (Gilbert–Elliott's chain).
    public var isStateful: Bool {
        if case .gilbertElliott = model { true } else { false }
    }

    public init(model: LossModel) {
        self.model = model
    }

    /// Decides the fate of the next transmitted segment (first transmissions and retransmissions
    /// alike). GE moves between states first, then draws the loss in the new state, as netem does.
    /// Certain outcomes (0% or 100%) draw nothing from `random`.
    public mutating func nextSegmentIsLost(using random: inout SeededRandom) -> Bool {
        switch model {
        case .bernoulli(let probability):
            return random.chance(probability.fraction)
        case .gilbertElliott(let p, let r, let badLoss, let goodLoss):
            if isInBadState {
                if random.chance(r.fraction) { isInBadState = false }
            } else {
                if random.chance(p.fraction) { isInBadState = true }
            }
            return random.chance(isInBadState ? badLoss.fraction : goodLoss.fraction)
        }
    }
}
