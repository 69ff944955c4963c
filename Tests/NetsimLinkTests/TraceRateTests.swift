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

    /// QA 35: a last timestamp of 10^13 ms passed the parser, and its period in nanoseconds
    /// overflowed 64 bits: the relay crashed (SIGILL) printing the link. Now the parser refuses it.
    @Test func aTraceLongerThanNetsimTakesIsRefusedAndTheLongestIsUsable() throws {
        let latest = DeliveryTrace.latestMilliseconds
        #expect(throws: DeliveryTrace.Invalid(description: "t: the last timestamp, 10000000000000 ms, is later than netsim takes (10000000000 ms, about 115 days); timestamps are milliseconds from the trace's start")) {
            try DeliveryTrace(parsing: "5\n10000000000000\n", name: "t")
        }
        #expect(throws: DeliveryTrace.Invalid(description: "t:1: 99999999999999999999 ms is later than netsim takes (10000000000 ms, about 115 days); timestamps are milliseconds from the trace's start")) {
            try DeliveryTrace(parsing: "99999999999999999999\n", name: "t")
        }
        let longest = try DeliveryTrace(parsing: "\(latest)\n", name: "t")
        #expect(longest.periodNanoseconds == latest * Self.ms)
        #expect(DirectionLink(trace: longest).description == "trace t (0.0 Mbit/s mean over \(latest / 1000) s)")
        #expect(longest.time(ofOpportunity: 100) == 101 * latest * Self.ms)  // 100 passes: 317 years
    }

    /// QA 35: a trace written on Windows (CRLF) was refused at line 1, the error quoting a raw CR.
    @Test func crlfLinesAreReadAndControlCharactersAreShownEscaped() throws {
        #expect(try DeliveryTrace(parsing: "1\r\n2\r\n", name: "t").milliseconds == [1, 2])
        #expect(throws: DeliveryTrace.Invalid(description: "t:2: '7\\u{07}' is not a timestamp; expected a whole number of milliseconds (Mahimahi's trace format: one per line)")) {
            try DeliveryTrace(parsing: "1\n7\u{7}\n", name: "t")
        }
    }
}
