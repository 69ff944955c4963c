import Foundation
import NetsimCore
import NetsimLink
import Testing

@Suite struct ConnectModelTests {
    static let allowedDelays: [Int64] = [0, 1, 3, 7, 15, 31, 63].map { $0 * second }

    static func lossy(up: LossModel?, down: LossModel?) -> LinkConfiguration {
        LinkConfiguration(up: DirectionLink(loss: up), down: DirectionLink(loss: down))
    }

    @Test func noLossConnectsAtOnce() {
        var random = SeededRandom(seed: 1)
        #expect(ConnectModel.outcome(link: .unimpaired, random: &random) == .connect(afterNanoseconds: 0))
        let zero = Self.lossy(up: .bernoulli(.zero), down: .bernoulli(.zero))
        #expect(ConnectModel.outcome(link: zero, random: &random) == .connect(afterNanoseconds: 0))
        let slowButClean = LinkConfiguration(both: DirectionLink(latency: .seconds(1), bandwidth: .kbit(8)))
        #expect(ConnectModel.outcome(link: slowButClean, random: &random) == .connect(afterNanoseconds: 0))
    }

    @Test func totalLossEitherWayTimesOutAfter127Seconds() {
        var random = SeededRandom(seed: 1)
        for link in [
            Self.lossy(up: .bernoulli(.certain), down: nil),
            Self.lossy(up: nil, down: .bernoulli(.certain)),
            LinkProfile.named("100-loss")!.link,
        ] {
            #expect(ConnectModel.outcome(link: link, random: &random) == .timeout(afterNanoseconds: 127 * second))
        }
    }

    @Test func everyDelayIsALinuxSynRetryTime() {
        let link = Self.lossy(up: .bernoulli(.percent(40)), down: .gilbertElliott(averageLoss: .percent(30), meanBurst: 3))
        var seen = Set<Int64>()
        for seed in UInt64(0)..<2000 {
            var random = SeededRandom(seed: seed)
            switch ConnectModel.outcome(link: link, random: &random) {
            case .connect(let after):
                #expect(Self.allowedDelays.contains(after))
                seen.insert(after)
            case .timeout(let after):
                #expect(after == 127 * second)
            }
        }
        #expect(seen.count >= 5)
    }

    /// At 50% each way an attempt succeeds with (1 − 0.5)(1 − 0.5) = 0.25, so the k-th retry is the
    /// first to succeed with 0.75^k × 0.25 and all seven attempts fail with 0.75^7 ≈ 13.3%.
    /// Each count must be within five binomial standard deviations of its expectation.
    @Test func outcomesAtFiftyPercentLossEachWayFollowTheGeometricLaw() {
        let link = LinkConfiguration(both: DirectionLink(loss: .bernoulli(.percent(50))))
        let runs = 40_000
        var random = SeededRandom(seed: 99)
        var counts = [Int64: Int]()
        var timeouts = 0
        for _ in 0..<runs {
            switch ConnectModel.outcome(link: link, random: &random) {
            case .connect(let after): counts[after, default: 0] += 1
            case .timeout: timeouts += 1
            }
        }
        func check(_ observed: Int, _ p: Double) {
            let expected = p * Double(runs)
            let sd = (Double(runs) * p * (1 - p)).squareRoot()
            #expect(abs(Double(observed) - expected) < 5 * sd, "observed \(observed), expected \(expected)")
        }
        for (k, delay) in Self.allowedDelays.enumerated() {
            check(counts[delay, default: 0], pow(0.75, Double(k)) * 0.25)
        }
        check(timeouts, pow(0.75, 7))
    }
}
