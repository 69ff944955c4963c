/// A small, fast, seedable random number generator (xoshiro256**, seeded through SplitMix64).
///
/// Every random decision in netsim flows from one of these, so a run with the same seed makes the
/// same decisions. Independent decision streams (per connection, per direction, per fault) are made
/// with ``derived(_:)`` from a label rather than by sharing one generator, so the order in which
/// connections happen to be served does not change what each of them experiences.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var s0: UInt64, s1: UInt64, s2: UInt64, s3: UInt64
    /// The seed this generator was made from (after derivation).
    public let seed: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        var sm = seed
        s0 = SeededRandom.splitMix(&sm)
        s1 = SeededRandom.splitMix(&sm)
        s2 = SeededRandom.splitMix(&sm)
        s3 = SeededRandom.splitMix(&sm)
    }

    /// A generator for an independent stream, identified by labels (e.g. connection id, direction).
    /// The same seed and labels always give the same stream.
    public func derived(_ labels: UInt64...) -> SeededRandom {
        var h = seed ^ 0x6A09_E667_F3BC_C908
        for label in labels {
            var x = h ^ (label &* 0x9E37_79B9_7F4A_7C15)
            h = SeededRandom.splitMix(&x)
        }
        return SeededRandom(seed: h)
    }

    /// A stable 64-bit label for a string, for ``derived(_:)``.
    public static func label(_ text: String) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for byte in text.utf8 {
            h ^= UInt64(byte)
            h = h &* 0x0000_0100_0000_01B3
        }
        return h
    }

    public mutating func next() -> UInt64 {
        let result = rotl(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
        return result
    }

    /// A uniform double in [0, 1).
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// True with the given probability.
    public mutating func chance(_ p: Double) -> Bool {
        if p <= 0 { return false }
        if p >= 1 { return true }
        return nextUnit() < p
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    private static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
