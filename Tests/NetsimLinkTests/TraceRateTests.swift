import NetsimCore
import NetsimLink
import Testing

/// A recorded link as the rate stage, on injected time (the relay's and the packet path's).
@Suite struct TraceRateTests {
    static let ms: Int64 = 1_000_000

    static func releases(_ limiter: inout TraceRateLimiter, _ bytes: Int, at ready: Int64) -> [Release] {
        var out: [Release] = []
        limiter.release(bytes: bytes, readyAt: ready) { out.append(Release(bytes: $0, at: $1)) }
        return out
    }

    @Test func bytesLeaveAtOpportunitiesAndShareWhatIsLeftOfOne() throws {
        let trace = try DeliveryTrace(milliseconds: [1, 2, 3, 4], name: "t")
        var limiter = TraceRateLimiter(trace: trace, epoch: 10 * Self.ms)
        // 3000 bytes at the epoch: two whole opportunities.
        #expect(Self.releases(&limiter, 3000, at: 10 * Self.ms) == [Release(bytes: 1500, at: 11 * Self.ms), Release(bytes: 1500, at: 12 * Self.ms)])
        // 100 bytes later: the next opportunity, 1400 bytes of it left over...
        #expect(Self.releases(&limiter, 100, at: 12 * Self.ms + 500_000) == [Release(bytes: 100, at: 13 * Self.ms)])
        // ...which bytes ready before it passes share.
        #expect(Self.releases(&limiter, 2000, at: 12 * Self.ms + 900_000) == [Release(bytes: 1400, at: 13 * Self.ms), Release(bytes: 600, at: 14 * Self.ms)])
    }

    @Test func unusedOpportunitiesAreLostAndTheTraceRepeats() throws {
        let trace = try DeliveryTrace(milliseconds: [1, 2, 3, 4], name: "t")
        var limiter = TraceRateLimiter(trace: trace, epoch: 0)
        // Nothing sent for 9.5 ms: the opportunities at 1…9 ms are gone; the trace's third pass
        // (8 ms +) offers 10 ms next.
        #expect(Self.releases(&limiter, 1500, at: 9 * Self.ms + 500_000) == [Release(bytes: 1500, at: 10 * Self.ms)])
    }

    @Test func theShaperFollowsTheTraceInOrderAndLosesNothing() throws {
        // The bundled LTE trace's shape at a small scale: bursts and gaps.
        let trace = try DeliveryTrace(milliseconds: [0, 0, 0, 5, 5, 20], name: "bursty")
        var shaper = DirectionShaper(link: DirectionLink(latency: .milliseconds(10), trace: trace), roundTripNanoseconds: 20 * Self.ms,
                                     random: SeededRandom(seed: 1), traceEpoch: 0)
        var out: [Release] = []
        for chunk in 0..<10 { shaper.schedule(bytes: 4096, arrivedAt: Int64(chunk) * Self.ms, into: &out) }
        #expect(out.reduce(0) { $0 + $1.bytes } == 40960)
        #expect(zip(out, out.dropFirst()).allSatisfy { $0.at <= $1.at }, "never out of order")
        // 40960 bytes need 28 opportunities (6 a 20 ms pass): the last in the 5th pass (80 ms +).
        #expect(out.last!.at >= 80 * Self.ms && out.last!.at <= 100 * Self.ms, "\(out.last!.at)")
        #expect(out.first!.at >= 10 * Self.ms, "after the latency")
    }

    @Test func aTraceIsAnImpairmentAndSaysWhatItIs() throws {
        let link = DirectionLink(trace: try DeliveryTrace(parsing: "1\n", name: "/x/one.down"))
        #expect(link.isImpaired)
        #expect(link.description == "trace one.down (12.0 Mbit/s mean over 1 ms)")
    }
}
